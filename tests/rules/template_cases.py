#!/usr/bin/env python3
"""Template output, Prometheus 2.42 as the judge: a table of cases.

  template_cases.py write DIR      writes DIR/templates_fmt.rules.yml and
                                   DIR/pass_templates_fmt_test.yml from CASES; each
                                   case's expected output is what promtool (Debian's
                                   prometheus 2.42) prints for it, asked here
  template_cases.py check DIR      fails when DIR's files are not what `write` makes
                                   now (the table changed, or promtool changed)

Each case is one alert: its expression gives the value ($value) and a label `s`
($labels.s); its annotation `out` is the template. The test file expects promtool's
rendering, so `unit.rules_promtool_agreement` (promtool and memcgtool must both pass
every tests/rules/pass_*_test.yml) proves memcgtool prints what Prometheus prints, and
`unit.template_cases` proves the expectations are promtool's. Needs promtool; exits 77
without it. The cases: Go's fmt verbs over float64 ($value), string ($labels.s) and
int (a template literal) arguments, with flags, width and precision, their mismatches
(%!d(float64=3)), missing and extra arguments; the humanize family at the edges of
their prefixes, of zero, NaN, the infinities and negative numbers.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

# (template, value, label s)
CASES = [
    # printf of a float64 ($value)
    ('{{ $value | printf "%d" }}', "3", "x"),
    ('{{ $value | printf "%5d" }}', "3", "x"),
    ('{{ $value | printf "%s" }}', "3", "x"),
    ('{{ $value | printf "%v" }}', "0.1", "x"),
    ('{{ $value | printf "%v" }}', "1e21", "x"),
    ('{{ $value | printf "%v" }}', "123456789", "x"),
    ('{{ $value | printf "%v" }}', "0.00001234", "x"),
    ('{{ $value | printf "%8v|" }}', "2.5", "x"),
    ('{{ $value | printf "%-8v|" }}', "2.5", "x"),
    ('{{ $value | printf "%.2v" }}', "3.14159", "x"),
    ('{{ $value | printf "%g" }}', "100000", "x"),
    ('{{ $value | printf "%g" }}', "1000000", "x"),
    ('{{ $value | printf "%G" }}', "1e-7", "x"),
    ('{{ $value | printf "%.3g" }}', "0.000123456", "x"),
    ('{{ $value | printf "%.3g" }}', "1234567", "x"),
    ('{{ $value | printf "%#g" }}', "2", "x"),
    ('{{ $value | printf "%f" }}', "3", "x"),
    ('{{ $value | printf "%.2f" }}', "2.675", "x"),
    ('{{ $value | printf "%08.3f" }}', "-3.14159", "x"),
    ('{{ $value | printf "%+.1f" }}', "2", "x"),
    ('{{ $value | printf "% .1f" }}', "2", "x"),
    ('{{ $value | printf "%F" }}', "1.5", "x"),
    ('{{ $value | printf "%e" }}', "123456", "x"),
    ('{{ $value | printf "%.2E" }}', "0.000123", "x"),
    ('{{ $value | printf "%x" }}', "3", "x"),
    ('{{ $value | printf "%X" }}', "-0.375", "x"),
    ('{{ $value | printf "%.2x" }}', "1", "x"),
    ('{{ $value | printf "%b" }}', "3", "x"),
    ('{{ $value | printf "%o" }}', "8", "x"),
    ('{{ $value | printf "%c" }}', "65", "x"),
    ('{{ $value | printf "%q" }}', "1.5", "x"),
    ('{{ $value | printf "%t" }}', "1", "x"),
    ('{{ $value | printf "%U" }}', "1", "x"),
    ('{{ $value | printf "%f %v %e %g" }}', "NaN", "x"),
    ('{{ $value | printf "%6.1f|%-6v|%e" }}', "+Inf", "x"),
    ('{{ $value | printf "%f|%v|%+v" }}', "-Inf", "x"),
    ('{{ $value | printf "%v|%.1f|%g" }}', "-0", "x"),
    ('{{ $value | printf "%.0f %.0f" 2.5 }}', "0.5", "x"),
    ('{{ printf "%.1f%%" $value }}', "12.34", "x"),
    ('{{ printf "%d %s" $value }}', "1", "x"),
    ('{{ printf "%v" $value $value }}', "1", "x"),
    ('{{ printf "no verbs" $value }}', "1", "x"),
    ('{{ printf "%" $value }}', "1", "x"),
    ('{{ printf "%-" $value }}', "1", "x"),
    ('{{ printf "%z" $value }}', "1", "x"),
    ('{{ printf "%5%|" }}', "1", "x"),
    # printf of a string ($labels.s)
    ('{{ $labels.s | printf "%s|%v" }}', "1", "abc"),
    ('{{ printf "%s|%v" $labels.s $labels.s }}', "1", "abc"),
    ('{{ printf "%6s|%-6s|%.2s|%6.2s|" $labels.s $labels.s $labels.s $labels.s }}', "1", "abc"),
    ('{{ $labels.s | printf "%d" }}', "1", "abc"),
    ('{{ $labels.s | printf "%5.1f" }}', "1", "abc"),
    ('{{ $labels.s | printf "%x" }}', "1", "abc"),
    ('{{ $labels.s | printf "% X" }}', "1", "abc"),
    ('{{ $labels.s | printf "%q" }}', "1", 'say "hi"\\'),
    ('{{ $labels.s | printf "%t" }}', "1", "abc"),
    ('{{ $labels.s | printf "%c" }}', "1", "abc"),
    ('{{ printf "%s" $labels.missing }}', "1", "abc"),
    ('{{ $labels.s | printf "%s" }}', "1", "grüße"),
    ('{{ $labels.s | printf "%5s|%.3s|" }}', "1", "grüße"),
    # printf of template literals: ints are int, 1.5 and 1e3 float64, "x" string
    ('{{ printf "%d|%5d|%-5d|%05d|%+d" 42 42 42 42 42 }}', "1", "x"),
    ('{{ printf "%x|%X|%o|%O|%b|%#x|%#o" 255 255 255 255 5 255 255 }}', "1", "x"),
    ('{{ printf "%c|%q|%U|%#U" 65 65 65 65 }}', "1", "x"),
    ('{{ printf "%s|%f|%g|%t|%v" 3 3 3 3 3 }}', "1", "x"),
    ('{{ printf "%d|%v|%s" -7 -7 -7 }}', "1", "x"),
    ('{{ printf "%v|%v|%d" 1.5 1e3 1e3 }}', "1", "x"),
    ('{{ printf "%s|%q|%d" "lit" "lit" "lit" }}', "1", "x"),
    ('{{ printf "%v %v" 1 }}', "1", "x"),
    ('{{ 42 }}|{{ 1.5 }}|{{ 1e3 }}|{{ -0.0 }}', "1", "x"),
    ('{{ $value }}|{{ .Value }}', "1e-7", "x"),
    ('{{ $labels.missing }}|{{ $labels.s }}|{{ .Labels.s }}|{{ $labels }}', "1", "a b"),
    ('{{ $value | printf "%#x|%+x|%08.2f|%-8.2e|%+08d" }}', "-2.5", "x"),
    ('{{ printf "%+08v|%-+8v|% v|%08v" $value $value $value $value }}', "2.5", "x"),
    ('{{ printf "%#v|%#q" $labels.s $labels.s }}', "1", "tab\there"),
    ('{{ printf "%q|%x" $labels.s $labels.s }}', "1", "\u00e9\n\u0001"),
    ('{{ $value }}', "123456.5", "x"),
    ('{{ $value }}', "-1.5e+300", "x"),
    # humanize: SI prefixes up and down, their edges, 0, NaN, the infinities, signs
    ('{{ humanize $value }}', "0", "x"),
    ('{{ humanize $value }}', "999.95", "x"),
    ('{{ humanize $value }}', "999.94", "x"),
    ('{{ humanize $value }}', "1000", "x"),
    ('{{ humanize $value }}', "1234567", "x"),
    ('{{ humanize $value }}', "-1234567", "x"),
    ('{{ humanize $value }}', "1e30", "x"),
    ('{{ humanize $value }}', "0.001", "x"),
    ('{{ humanize $value }}', "0.0009999", "x"),
    ('{{ humanize $value }}', "-0.0000123", "x"),
    ('{{ humanize $value }}', "1e-30", "x"),
    ('{{ humanize $value }}', "NaN", "x"),
    ('{{ humanize $value }}', "-Inf", "x"),
    ('{{ humanize 1234 }}|{{ humanize "2.5e6" }}|{{ humanize 0.5 }}', "1", "x"),
    ('{{ $labels.s | humanize }}', "1", "1e3"),
    # humanize1024
    ('{{ humanize1024 $value }}', "1", "x"),
    ('{{ humanize1024 $value }}', "1023", "x"),
    ('{{ humanize1024 $value }}', "1024", "x"),
    ('{{ humanize1024 $value }}', "1048575", "x"),
    ('{{ humanize1024 $value }}', "-1099511627776", "x"),
    ('{{ humanize1024 $value }}', "0.5", "x"),
    ('{{ humanize1024 $value }}', "1e30", "x"),
    ('{{ humanize1024 $value }}', "+Inf", "x"),
    # humanizeDuration
    ('{{ humanizeDuration $value }}', "0", "x"),
    ('{{ humanizeDuration $value }}', "0.000001", "x"),
    ('{{ humanizeDuration $value }}', "0.25", "x"),
    ('{{ humanizeDuration $value }}', "0.9999", "x"),
    ('{{ humanizeDuration $value }}', "1", "x"),
    ('{{ humanizeDuration $value }}', "59.99", "x"),
    ('{{ humanizeDuration $value }}', "60", "x"),
    ('{{ humanizeDuration $value }}', "3599.9", "x"),
    ('{{ humanizeDuration $value }}', "3600", "x"),
    ('{{ humanizeDuration $value }}', "86399", "x"),
    ('{{ humanizeDuration $value }}', "93784", "x"),
    ('{{ humanizeDuration $value }}', "-93784.5", "x"),
    ('{{ humanizeDuration $value }}', "-0.5", "x"),
    ('{{ humanizeDuration $value }}', "1e-12", "x"),
    ('{{ humanizeDuration $value }}', "NaN", "x"),
    ('{{ humanizeDuration 90 }}', "1", "x"),
    # humanizePercentage
    ('{{ humanizePercentage $value }}', "0", "x"),
    ('{{ humanizePercentage $value }}', "0.123456", "x"),
    ('{{ humanizePercentage $value }}', "1", "x"),
    ('{{ humanizePercentage $value }}', "-0.5", "x"),
    ('{{ humanizePercentage $value }}', "123.456", "x"),
    ('{{ humanizePercentage $value }}', "1e-9", "x"),
    ('{{ humanizePercentage $value }}', "+Inf", "x"),
    # humanizeTimestamp
    ('{{ humanizeTimestamp $value }}', "0", "x"),
    ('{{ humanizeTimestamp $value }}', "1435065584.128", "x"),
    ('{{ humanizeTimestamp $value }}', "1700000000", "x"),
    ('{{ humanizeTimestamp $value }}', "-1.5", "x"),
    ('{{ humanizeTimestamp $value }}', "NaN", "x"),
    # pipelines and string functions
    ('{{ $value | humanize | printf "[%8s]" }}', "1234567", "x"),
    ('{{ $labels.s | toUpper }}|{{ $labels.s | toLower }}|{{ $labels.s | title }}', "1", "hello wORLD-x_y"),
    ('{{ printf "%s=%v" "v" $value | toUpper }}', "1e-9", "x"),
]

RULES = "templates_fmt.rules.yml"
TEST = "pass_templates_fmt_test.yml"


def yq(s):
    """A YAML single-quoted scalar."""
    return "'" + s.replace("'", "''") + "'"


def yd(s):
    """A YAML double-quoted scalar (JSON's escapes are YAML's)."""
    return json.dumps(s)


def pql_string(s):
    return json.dumps(s)


def rules_text():
    out = ["# Generated by template_cases.py from its CASES: one alert per template case.",
           "groups:", "  - name: templates_fmt", "    rules:"]
    for i, (tpl, value, s) in enumerate(CASES):
        expr = 'label_replace(vector(%s), "s", %s, "", "")' % (value, pql_string(s))
        out += ["      - alert: Fmt%03d" % i,
                "        expr: %s" % yq(expr),
                "        annotations:",
                "          out: %s" % yq(tpl)]
    return "\n".join(out) + "\n"


def test_text(expected):
    out = ["# Generated by template_cases.py: each case's output as Prometheus 2.42 (promtool)",
           "# renders it; memcgtool must render the same (unit.rules_promtool_agreement).",
           "rule_files: [%s]" % RULES, "evaluation_interval: 1m", "tests:", "  - interval: 1m",
           "    input_series: []", "    alert_rule_test:"]
    for i, (tpl, value, s) in enumerate(CASES):
        out += ["      # %s  ($value %s, $labels.s %s)" % (tpl, value, json.dumps(s, ensure_ascii=False)),
                "      - eval_time: 0m",
                "        alertname: Fmt%03d" % i,
                "        exp_alerts:",
                "          - exp_labels: {s: %s}" % yd(s),
                "            exp_annotations:",
                "              out: %s" % yd(expected[i])]
    return "\n".join(out) + "\n"


def go_unquote(q):
    """A Go strconv.Quote'd string (what promtool prints) back to text."""
    body, out, i = q[1:-1], [], 0
    simple = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
              "\\": "\\", '"': '"', "'": "'"}
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        e = body[i + 1]
        n = {"x": 2, "u": 4, "U": 8}.get(e)
        if n:
            out.append(chr(int(body[i + 2:i + 2 + n], 16)))
            i += 2 + n
        else:
            out.append(simple[e])
            i += 2
    return "".join(out)


def ask_promtool():
    """Runs promtool on the cases with a placeholder expectation and reads its renderings."""
    d = tempfile.mkdtemp(prefix="memcg_exporter_test_tpl_")
    try:
        with open(os.path.join(d, RULES), "w") as f:
            f.write(rules_text())
        with open(os.path.join(d, TEST), "w") as f:
            f.write(test_text(["@placeholder@"] * len(CASES)))
        r = subprocess.run(["promtool", "test", "rules", os.path.join(d, TEST)],
                           capture_output=True, text=True)
        text = r.stdout + r.stderr
    finally:
        shutil.rmtree(d)
    got = {}
    # "alertname: FmtNNN, time: 0s, ... got:[ 0: Labels:{...} Annotations:{out="..."} ]"
    for m in re.finditer(r'alertname: Fmt(\d+),.*?got:\[\s*0:\s*Labels:\{[^\n]*\}\s*Annotations:\{out=("(?:[^"\\]|\\.)*")\}',
                         text, re.S):
        got[int(m.group(1))] = go_unquote(m.group(2))
    missing = [i for i in range(len(CASES)) if i not in got]
    if missing:
        sys.exit("promtool gave no rendering for cases %s:\n%s" % (missing, text[-3000:]))
    return [got[i] for i in range(len(CASES))]


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "check"):
        sys.exit(__doc__)
    if not shutil.which("promtool"):
        print("SKIP: no promtool")
        return 77
    d = sys.argv[2]
    expected = ask_promtool()
    want = {RULES: rules_text(), TEST: test_text(expected)}
    if sys.argv[1] == "write":
        for name, text in want.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        print("%d cases written to %s" % (len(CASES), d))
        return 0
    bad = 0
    for name, text in want.items():
        have = open(os.path.join(d, name)).read()
        if have != text:
            bad += 1
            print("FAIL %s is not what promtool renders from the table now; run: %s write %s" % (name, sys.argv[0], d))
    print("%d template cases, %d stale files" % (len(CASES), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
