#!/usr/bin/env python3
"""Checks that every relative link in the project's Markdown resolves.

usage: check_links.py SOURCE_DIR

Reads README.md, CONTRIBUTING.md, SECURITY.md, CHANGELOG.md and every .md under docs/.
For each link or image `[text](target)` outside code, a relative target must be an
existing file or folder, and a `#anchor` (alone or after a .md target) must be a heading
of that file, slugged as GitHub does. External links (http:, https:, mailto:) are not
fetched. Prints every broken link with file and line; exits 1 if there is one.
"""
import os
import re
import sys

LINK = re.compile(r'!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')


def strip_code(lines):
    """Lines with fenced blocks blanked and inline code removed (keeps numbering)."""
    out, fence = [], None
    for line in lines:
        m = re.match(r'^\s*(```+|~~~+)', line)
        if m:
            if fence is None:
                fence = m.group(1)[0]
            elif m.group(1)[0] == fence:
                fence = None
            out.append('')
            continue
        out.append('' if fence else re.sub(r'`+[^`]*`+', '', line))
    return out


def slug(text):
    """GitHub's heading id: lowercase, punctuation other than '-' and '_' dropped,
    spaces as '-' (inline code and emphasis keep their text)."""
    text = re.sub(r'<[^>]+>', '', text).strip().lower()
    text = re.sub(r'[^\w\- ]', '', text)
    return text.replace(' ', '-')


def anchors(path, cache={}):
    if path not in cache:
        seen, found = {}, set()
        with open(path, encoding='utf-8') as f:
            lines = f.read().split('\n')
        fence = None
        for line in lines:
            m = re.match(r'^\s*(```+|~~~+)', line)
            if m:
                fence = None if fence else m.group(1)[0]
                continue
            if fence:
                continue
            h = re.match(r'^#{1,6}\s+(.*?)\s*#*\s*$', line)
            if not h:
                continue
            s = slug(h.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            found.add(s if n == 0 else f'{s}-{n}')
        cache[path] = found
    return cache[path]


def files(root):
    for name in ('README.md', 'CONTRIBUTING.md', 'SECURITY.md', 'CHANGELOG.md'):
        p = os.path.join(root, name)
        if os.path.exists(p):
            yield p
    for d, _, names in os.walk(os.path.join(root, 'docs')):
        for n in sorted(names):
            if n.endswith('.md'):
                yield os.path.join(d, n)


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else '.')
    bad, checked = [], 0
    for path in files(root):
        with open(path, encoding='utf-8') as f:
            lines = strip_code(f.read().split('\n'))
        for no, line in enumerate(lines, 1):
            for target in LINK.findall(line):
                if re.match(r'^[a-z][a-z0-9+.-]*:', target):
                    continue  # http:, https:, mailto:
                checked += 1
                where = f'{os.path.relpath(path, root)}:{no}: {target}'
                file_part, _, anchor = target.partition('#')
                dest = path if not file_part else os.path.normpath(
                    os.path.join(os.path.dirname(path), file_part))
                if not os.path.exists(dest):
                    bad.append(f'{where}: no such file {os.path.relpath(dest, root)}')
                    continue
                if anchor and dest.endswith('.md') and anchor not in anchors(dest):
                    bad.append(f'{where}: no heading #{anchor} in {os.path.relpath(dest, root)}')
    for b in bad:
        print(b)
    print(f'{checked} relative links checked, {len(bad)} broken')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
