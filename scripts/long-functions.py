#!/usr/bin/env python3
"""Lists every function over N lines (default 100) in the crates' `src/` folders,
counted from its `fn` line to its closing brace.

    scripts/long-functions.py [ROOT] [N]
"""
import os, re, sys
root = sys.argv[1] if len(sys.argv) > 1 else '.'
limit = int(sys.argv[2]) if len(sys.argv) > 2 else 100
fn_re = re.compile(r'^(\s*)(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+"[^"]*"\s+)?fn\s+(\w+)')

def strip(line, state):
    # remove strings/chars/comments roughly; state tracks block comments and raw/normal strings
    out = []
    i = 0
    n = len(line)
    while i < n:
        if state['block']:
            j = line.find('*/', i)
            if j < 0: return ''.join(out)
            state['block'] = False; i = j + 2; continue
        if state['str']:
            term = state['str']
            if term == '"':
                if line[i] == '\\': i += 2; continue
                if line[i] == '"': state['str'] = None
                i += 1; continue
            else:
                if line.startswith(term, i): state['str'] = None; i += len(term); continue
                i += 1; continue
        c = line[i]
        if line.startswith('//', i): break
        if line.startswith('/*', i): state['block'] = True; i += 2; continue
        m = re.match(r'b?r(#*)"', line[i:])
        if m and (i == 0 or not (line[i-1].isalnum() or line[i-1] == '_')):
            state['str'] = '"' + m.group(1); i += m.end(); continue
        if c == '"': state['str'] = '"'; i += 1; continue
        if c == "'":
            m = re.match(r"'(\\.|\\u\{[0-9a-fA-F]+\}|[^\\'])'", line[i:])
            if m: i += m.end(); continue
        out.append(c); i += 1
    return ''.join(out)

for dirpath, dirs, files in os.walk(root):
    dirs[:] = [d for d in dirs if d not in ('target', '.git')]
    parts = os.path.relpath(dirpath, root).split(os.sep)
    if 'src' not in parts: continue
    for f in files:
        if not f.endswith('.rs'): continue
        path = os.path.join(dirpath, f)
        lines = open(path, encoding='utf-8').read().split('\n')
        state = {'block': False, 'str': None}
        stripped = [strip(l, state) for l in lines]
        for idx, l in enumerate(stripped):
            m = fn_re.match(l)
            if not m: continue
            # find opening brace (or ; for declarations)
            depth = 0; started = False; end = None
            for j in range(idx, len(stripped)):
                s = stripped[j]
                for ch in s:
                    if ch == ';' and not started and depth == 0:
                        end = -1; break
                    if ch == '{': depth += 1; started = True
                    elif ch == '}':
                        depth -= 1
                        if started and depth == 0: end = j; break
                if end is not None: break
            if end is None or end < 0: continue
            length = end - idx + 1
            if length > limit:
                print(f"{length:5d} {os.path.relpath(path, root)}:{idx+1} {m.group(8)}")
