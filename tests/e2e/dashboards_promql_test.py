#!/usr/bin/env python3
"""Unit tests of dashboards_promql.py: Grafana's variable formats and the PromQL scan
the metric-name check relies on (python3 -m unittest, stdlib only)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashboards_promql as dp  # noqa: E402


class GrafanaVariables(unittest.TestCase):
    def test_multi_value_is_a_regex_alternation_of_escaped_values(self):
        # the PromQL string literal "\\." is the regex \. (a literal dot)
        self.assertEqual(dp.format_variable(["/system.slice/a.service", "/b"], True),
                         r"(/system\\.slice/a\\.service|/b)")

    def test_one_value_of_a_multi_variable_is_escaped_without_parentheses(self):
        self.assertEqual(dp.format_variable(["/a+b"], True), r"/a\\+b")

    def test_single_value_variable_only_escapes_the_string(self):
        self.assertEqual(dp.format_variable(["/a.b'c"], False), "/a.b\\\\'c")

    def test_rate_interval(self):
        # Grafana: max($__interval + scrape interval, 4 * scrape interval)
        ctx = dp.Context(range_s=3600, scrape_s=15, variables={})
        self.assertEqual(ctx.builtins()["__interval"], "15s")
        self.assertEqual(ctx.builtins()["__rate_interval"], "1m")
        ctx = dp.Context(range_s=120, scrape_s=1, variables={})
        self.assertEqual(ctx.builtins()["__interval"], "1s")
        self.assertEqual(ctx.builtins()["__rate_interval"], "4s")
        ctx = dp.Context(range_s=7 * 86400, scrape_s=15, variables={})
        self.assertEqual(ctx.builtins()["__interval"], "10m")  # 604.8 s: Grafana's 10m step
        self.assertEqual(ctx.builtins()["__rate_interval"], "615s")
        self.assertEqual(ctx.builtins()["__range"], "7d")

    def test_substitute_all_forms_and_refuse_unknown(self):
        ctx = dp.Context(120, 1, {"cgroup": (["/a", "/b.c"], True), "instance": (["n:1"], False)})
        self.assertEqual(ctx.substitute('x{instance="$instance",cgroup=~"${cgroup}"}[$__rate_interval]'),
                         r'x{instance="n:1",cgroup=~"(/a|/b\\.c)"}[4s]')
        self.assertEqual(ctx.substitute("[[instance]] ${instance:raw}"), "n:1 n:1")
        with self.assertRaises(KeyError):
            ctx.substitute("$nope")


class PromqlScan(unittest.TestCase):
    def test_names_skip_functions_keywords_labels_and_durations(self):
        e = ('sum by (cgroup, le) (rate(a_bucket{kind=~"direct|memcg", x="sum(y)"}[5m] offset 1h)) '
             '/ on(cgroup) group_left(foo) b > bool 3 and topk(3, c) unless d')
        self.assertEqual(dp.metric_names(e), {"a_bucket", "b", "c", "d"})

    def test_bare_name_selector(self):
        self.assertEqual(dp.metric_names('{__name__="m", a="b"}'), {"m"})

    def test_labels_of_matchers_and_clauses(self):
        sel, clause = dp.analyze('sum without (kind) (rate(m{cgroup="/a", kind!="x"}[1m])) * on(instance) n')
        self.assertEqual(sel, [("m", ["cgroup", "kind"]), ("n", [])])
        self.assertEqual(clause, {"kind", "instance"})

    def test_label_problems(self):
        known = {"m": {"cgroup", "kind"}, "m_bucket": {"cgroup", "kind", "le"}}
        self.assertEqual(dp.label_problems('sum by (cgroup, le) (rate(m_bucket{kind="x"}[1m]))', known), [])
        self.assertEqual(dp.label_problems('sum by (cgroups) (m{knd="x"})', known),
                         ["label knd of m", "label cgroups in a by/without/on list"])
        # expressions over recording rules are not checked (their labels are not in the table)
        self.assertEqual(dp.label_problems('sum by (zz) (a:b:c)', known), [])

    def test_variable_queries(self):
        self.assertEqual(dp.variable_promql('label_values(m{a="b"}, cgroup)'), 'm{a="b"}')
        self.assertIsNone(dp.variable_promql("label_values(cgroup)"))
        self.assertEqual(dp.variable_promql("query_result(topk(3, m))"), "topk(3, m)")


if __name__ == "__main__":
    unittest.main()
