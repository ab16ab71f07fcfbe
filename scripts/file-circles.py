#!/usr/bin/env python3
"""Usage: scripts/file-circles.py ROOT [--strict]

File circles: which .rs files in a crate's src/ import each other in a circle.

An edge A -> B means a path written in A (a `use`, or an inline `crate::`/`super::`/
`self::`/child-module path) resolves to an item of file B: the path is followed
module by module as far as files exist, and the last file reached is B. Test modules
(`#[cfg(test)] mod ... {}`) are left out. Edges from a module to one of its own
ancestors (`use super::Item` in a child) are left out too, as a child using its
parent's items is how Rust modules are written; `--strict` keeps them.
"""
import os, re, sys
from collections import defaultdict

def strip_comments_strings(text):
    out = []; i = 0; n = len(text)
    while i < n:
        if text.startswith('//', i):
            j = text.find('\n', i); j = n if j < 0 else j; i = j; continue
        if text.startswith('/*', i):
            j = text.find('*/', i); j = n if j < 0 else j + 2; i = j; continue
        m = re.match(r'b?r(#*)"', text[i:i+20])
        if m and (i == 0 or not (text[i-1].isalnum() or text[i-1] == '_')):
            end = '"' + m.group(1); j = text.find(end, i + m.end()); j = n if j < 0 else j + len(end)
            out.append('""'); i = j; continue
        if text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == '\\' else 1
            out.append('""'); i = j + 1; continue
        if text[i] == "'":
            m = re.match(r"'(\\.|\\u\{[0-9a-fA-F]+\}|[^\\'])'", text[i:i+12])
            if m: out.append("' '"); i += m.end(); continue
        out.append(text[i]); i += 1
    return ''.join(out)

def drop_test_modules(text):
    # remove `#[cfg(test)] mod name { ... }` blocks
    while True:
        m = re.search(r'#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{', text)
        if not m: return text
        depth = 0; j = m.end() - 1
        while j < len(text):
            if text[j] == '{': depth += 1
            elif text[j] == '}':
                depth -= 1
                if depth == 0: break
            j += 1
        text = text[:m.start()] + text[j+1:]

def expand_use(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e]"""
    tree = re.sub(r'\s+', '', tree)
    def rec(prefix, s):
        # s is a use-tree
        i = s.find('{')
        if i < 0:
            return [prefix + s]
        head = s[:i]; body = s[i+1:s.rfind('}')]
        parts = []; depth = 0; cur = ''
        for ch in body:
            if ch == ',' and depth == 0: parts.append(cur); cur = ''; continue
            if ch == '{': depth += 1
            if ch == '}': depth -= 1
            cur += ch
        if cur: parts.append(cur)
        out = []
        for p in parts:
            out.extend(rec(prefix + head, p))
        return out
    return rec('', tree)

def module_files(src):
    files = {}
    for dirpath, dirs, fs in os.walk(src):
        for f in fs:
            if f.endswith('.rs'):
                p = os.path.join(dirpath, f)
                rel = os.path.relpath(p, src)[:-3].split(os.sep)
                if rel[-1] == 'mod': rel = rel[:-1]
                if rel in (['lib'], ['main']): rel = []
                # a binary target's modules (main.rs) share the tree only when no lib; keep both
                files.setdefault(tuple(rel), p)
    return files

def analyse(src):
    files = module_files(src)
    # main.rs and lib.rs both map to (); prefer lib.rs
    if os.path.exists(os.path.join(src, 'lib.rs')): files[()] = os.path.join(src, 'lib.rs')
    modpath_of = {v: k for k, v in files.items()}
    edges = defaultdict(set)
    for path, mod in modpath_of.items():
        text = drop_test_modules(strip_comments_strings(open(path, encoding='utf-8').read()))
        children = set(re.findall(r'\bmod\s+(\w+)\s*;', text))
        paths = []
        for m in re.finditer(r'\buse\s+([^;]+);', text):
            paths.extend(expand_use(m.group(1)))
        for m in re.finditer(r'(?<![\w:])((?:crate|super|self)(?:::\w+)+)', text):
            paths.append(m.group(1))
        for c in children:
            for m in re.finditer(r'(?<![\w:])(' + c + r'(?:::\w+)+)', text):
                paths.append(m.group(1))
        is_mod_file = os.path.basename(path) in ('mod.rs', 'lib.rs', 'main.rs')
        for p in paths:
            segs = [s for s in p.split('::') if s]
            segs = [s.split(' as ')[0] for s in segs]
            if not segs: continue
            if segs[0] == 'crate': base = []; segs = segs[1:]
            elif segs[0] in ('super', 'self'):
                base = list(mod)
                while segs and segs[0] in ('super', 'self'):
                    if segs[0] == 'super': base = base[:-1]
                    segs = segs[1:]
            elif segs[0] in children: base = list(mod)
            else: continue
            cur = tuple(base); target = files.get(cur)
            for s in segs:
                nxt = cur + (re.sub(r'as\w+$', '', s),)
                if nxt in files: cur = nxt; target = files[nxt]
                else: break
            if target and target != path:
                edges[path].add(target)
    return edges, modpath_of

def sccs(nodes, edges):
    index = {}; low = {}; stack = []; on = set(); out = []; counter = [0]
    sys.setrecursionlimit(10000)
    def strong(v):
        index[v] = low[v] = counter[0]; counter[0] += 1; stack.append(v); on.add(v)
        for w in edges.get(v, ()):
            if w not in index: strong(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: out.append(sorted(comp))
    for v in nodes:
        if v not in index: strong(v)
    return out

def is_parent(a, b, modpath_of):
    ma, mb = modpath_of[a], modpath_of[b]
    return len(mb) < len(ma) and ma[:len(mb)] == mb

root = sys.argv[1]
strict = '--strict' in sys.argv
for crate in sorted(os.listdir(root)):
    src = os.path.join(root, crate, 'src')
    if not os.path.isdir(src): continue
    if crate == 'target': continue
    edges, modpath_of = analyse(src)
    if not strict:
        edges = {a: {b for b in bs if not is_parent(a, b, modpath_of)} for a, bs in edges.items()}
    for comp in sccs(list(modpath_of), edges):
        rel = [os.path.relpath(c, root) for c in comp]
        print(crate + ': ' + '  '.join(rel))
        compset = set(comp)
        for a in comp:
            for b in sorted(edges.get(a, ())):
                if b in compset:
                    print('    ' + os.path.relpath(a, root) + ' -> ' + os.path.relpath(b, root))
