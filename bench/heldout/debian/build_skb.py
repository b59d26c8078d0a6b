#!/usr/bin/env python3
"""Build a held-out semi-structured knowledge base (SKB) bundle from Debian apt lists.

Usage:
    build_skb.py LISTS_DIR OUT_DIR [--max-packages N] [--seed S] [--validate-only]

Reads the deb822 ``*_Packages`` indexes that ``apt-get update`` leaves in LISTS_DIR
(plain, .gz, .xz, .bz2 or .lz4), optional ``*_Sources`` and ``*_Translation-en``
indexes, and /var/lib/dpkg/status (long descriptions of installed packages).
Only the ``main`` component and the amd64 + all architectures are kept.

Writes OUT_DIR/schema.json, OUT_DIR/nodes.jsonl.gz, OUT_DIR/edges.jsonl.gz and
OUT_DIR/build_stats.json, then validates the bundle.  Standard library only.
"""

from __future__ import annotations

import argparse
import bz2
import collections
import glob
import gzip
import hashlib
import lzma
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import bundle_writer

ARCHES = {"amd64", "all"}

# --------------------------------------------------------------------------------------
# schema
# --------------------------------------------------------------------------------------
SCHEMA = {
    "name": "debian-bookworm-main",
    "description": (
        "Debian 12 (bookworm) main archive for amd64: binary packages, the source packages "
        "they are built from, their maintainers, archive sections, debtags and virtual "
        "packages, linked by the package relationship fields (Depends, Recommends, Suggests, "
        "Provides, Enhances, Conflicts, Breaks, Replaces, Built-Using)."
    ),
    "node_types": [
        {
            "name": "package",
            "name_attr": "name",
            "description": (
                "A binary package (a .deb, also called a program, library, tool or app) that apt "
                "can install; attributes give its version, architecture (amd64 or all), priority, "
                "installed size in KiB, multi-arch mode, homepage and whether it is essential."
            ),
        },
        {
            "name": "source_package",
            "name_attr": "name",
            "description": (
                "A source package (also called a source, upstream project or codebase) from which "
                "one or more binary packages are built; attributes give its version, the domain of "
                "its maintainer's e-mail address and how many binary packages it builds."
            ),
        },
        {
            "name": "maintainer",
            "name_attr": "name",
            "description": (
                "A maintainer (also called a team, developer, packager or person) named in the "
                "Maintainer field: an individual Debian developer or a packaging team, identified by "
                "display name; attributes give the e-mail address and whether it is a team."
            ),
        },
        {
            "name": "section",
            "name_attr": "name",
            "description": (
                "An archive section (also called a category or area) that groups packages by "
                "subject, such as python, libs, games or admin."
            ),
        },
        {
            "name": "debtag",
            "name_attr": "name",
            "description": (
                "A debtag (also called a tag, label or keyword) classifying a package, written "
                "facet::value such as implemented-in::python or role::program; attributes give the "
                "facet and the value."
            ),
        },
        {
            "name": "virtual_package",
            "name_attr": "name",
            "description": (
                "A virtual package (also called a virtual name, capability or interface) that no "
                "real package is called, offered through the Provides field by one or more "
                "packages, such as mail-transport-agent or www-browser."
            ),
        },
    ],
    "edge_types": [
        # name, [(source, target)...], description
        (
            "depends",
            [("package", "package"), ("package", "virtual_package")],
            "Links a binary package to what it needs at run time: the package depends on the target "
            "package (or virtual package) and cannot work without it (Depends and Pre-Depends "
            "fields; every alternative of an 'a | b' dependency counts).",
        ),
        (
            "recommends",
            [("package", "package"), ("package", "virtual_package")],
            "Links a binary package to a strong optional companion: the package recommends the "
            "target package, which apt installs with it by default although it is not strictly "
            "required (Recommends field).",
        ),
        (
            "suggests",
            [("package", "package"), ("package", "virtual_package")],
            "Links a binary package to a weak optional companion: the package suggests the target "
            "package, which may make it more useful (Suggests field).",
        ),
        (
            "enhances",
            [("package", "package"), ("package", "virtual_package")],
            "Links an add-on to what it extends: the package enhances the target package with "
            "extra features or plugins (Enhances field).",
        ),
        (
            "provides",
            [("package", "virtual_package"), ("package", "package")],
            "Links a binary package to a name it can stand in for: the package provides the target "
            "virtual package (or real package), satisfying dependencies on it (Provides field).",
        ),
        (
            "conflicts",
            [("package", "package"), ("package", "virtual_package")],
            "Links two packages that exclude each other: the package conflicts with the target "
            "package, so both cannot be installed together (Conflicts field).",
        ),
        (
            "breaks",
            [("package", "package"), ("package", "virtual_package")],
            "Links a package to one it makes unusable: the package breaks the target package "
            "(some of its versions), so apt upgrades or removes the target (Breaks field).",
        ),
        (
            "replaces",
            [("package", "package"), ("package", "virtual_package")],
            "Links a package to one it takes over from: the package replaces the target package and "
            "may overwrite its files (Replaces field).",
        ),
        (
            "built_from",
            [("package", "source_package")],
            "Links a binary package to its origin: the package is built from the target source "
            "package, i.e. the .deb is compiled from that source (Source field).",
        ),
        (
            "built_using",
            [("package", "source_package")],
            "Links a binary package to code it embeds: the package is built using the target source "
            "package, statically including parts of it (Built-Using field).",
        ),
        (
            "maintained_by",
            [("source_package", "maintainer"), ("package", "maintainer")],
            "Links a source or binary package to the person or team responsible for it: the package "
            "is maintained by the target maintainer (Maintainer field).",
        ),
        (
            "in_section",
            [("package", "section")],
            "Links a binary package to its archive category: the package is filed in the target "
            "section (Section field).",
        ),
        (
            "tagged",
            [("package", "debtag")],
            "Links a binary package to a classification label: the package is tagged with the target "
            "debtag, describing its role, interface, language or purpose (Tag field).",
        ),
    ],
}

REL_FIELDS = {
    "Depends": "depends",
    "Pre-Depends": "depends",
    "Recommends": "recommends",
    "Suggests": "suggests",
    "Enhances": "enhances",
    "Conflicts": "conflicts",
    "Breaks": "breaks",
    "Replaces": "replaces",
}

SECTION_TEXT = {
    "admin": "System administration utilities that deal with users, disks, boot and services.",
    "cli-mono": "Software written for the Common Language Infrastructure (Mono, .NET).",
    "comm": "Communication software for modems, faxes, serial lines and similar devices.",
    "database": "Database servers, clients and tools.",
    "debian-installer": "Special packages used by the Debian installer.",
    "debug": "Debugging symbols and tools for finding problems in programs.",
    "devel": "Development tools: compilers, debuggers, build systems and editors for programmers.",
    "doc": "Documentation, manuals and FAQs.",
    "editors": "Text editors and word processors.",
    "education": "Software for teaching and learning.",
    "electronics": "Electronics and electrical engineering tools, circuit design and simulation.",
    "embedded": "Software for embedded devices and cross-development.",
    "fonts": "Font packages.",
    "games": "Games, toys and fun programs.",
    "gnome": "Software for the GNOME desktop environment.",
    "gnu-r": "The R statistical language and its libraries.",
    "gnustep": "Software for the GNUstep environment.",
    "golang": "The Go programming language and its libraries.",
    "graphics": "Editors, viewers and converters for images and graphics.",
    "hamradio": "Software for amateur (ham) radio operators.",
    "haskell": "The Haskell programming language and its libraries.",
    "httpd": "Web servers and their modules.",
    "interpreters": "Interpreters for scripting languages.",
    "introspection": "GObject introspection data and bindings.",
    "java": "The Java programming language, libraries and tools.",
    "javascript": "JavaScript libraries, Node.js modules and tools.",
    "kde": "Software for the KDE Plasma desktop.",
    "kernel": "Operating system kernels and kernel modules.",
    "libdevel": "Development files (headers, static libraries) of libraries.",
    "libs": "Shared libraries used by other programs.",
    "lisp": "Lisp and Scheme languages and libraries.",
    "localization": "Language packs and localization support.",
    "mail": "E-mail servers, clients, filters and tools.",
    "math": "Mathematics software, numerical analysis and computer algebra.",
    "metapackages": "Packages that only pull in other packages.",
    "misc": "Miscellaneous software that fits no other section.",
    "net": "Network daemons, clients and tools.",
    "news": "Usenet news servers and readers.",
    "ocaml": "The OCaml programming language and its libraries.",
    "oldlibs": "Obsolete libraries kept for compatibility.",
    "otherosfs": "Emulators and tools for other operating systems and file systems.",
    "perl": "The Perl language and its modules.",
    "php": "The PHP language, its modules and libraries.",
    "python": "The Python language, its modules and libraries.",
    "ruby": "The Ruby language and its libraries (gems).",
    "rust": "The Rust language and its crates.",
    "science": "Scientific software for research and data analysis.",
    "shells": "Command shells.",
    "sound": "Audio players, recorders, editors and sound servers.",
    "tasks": "Packages that set up a task such as a desktop or server role.",
    "tex": "The TeX typesetting system and its tools.",
    "text": "Text processing utilities, dictionaries and spell checkers.",
    "utils": "General system utilities.",
    "vcs": "Version control systems and related tools.",
    "video": "Video players, editors and encoders.",
    "web": "Web browsers, proxies and web tools.",
    "x11": "The X Window System and programs that run under it.",
    "xfce": "Software for the Xfce desktop.",
    "zope": "The Zope/Plone framework.",
}

FACET_TEXT = {
    "accessibility": "accessibility support",
    "admin": "system administration activity",
    "biology": "biology and bioinformatics",
    "culture": "language or culture",
    "devel": "software development",
    "field": "field of application",
    "game": "kind of game",
    "hardware": "hardware support",
    "implemented-in": "programming language the software is written in",
    "interface": "user interface kind",
    "junior": "suitability for young users",
    "mail": "e-mail handling",
    "made-of": "file formats the package contents are made of",
    "network": "networking role",
    "office": "office work",
    "protocol": "network protocol supported",
    "role": "role of the package (program, library, data...)",
    "scope": "scope of the software",
    "security": "security related",
    "sound": "audio related",
    "special": "special tags",
    "suite": "software suite the package belongs to",
    "uitoolkit": "user interface toolkit used",
    "use": "what the software is used for",
    "web": "world wide web related",
    "works-with": "kind of data the software works with",
    "works-with-format": "file format the software handles",
    "x11": "X11 related",
}


# --------------------------------------------------------------------------------------
# reading deb822 indexes
# --------------------------------------------------------------------------------------
def _lz4_block(src: bytes, out: bytearray) -> None:
    """Pure-python LZ4 block decoder (fallback when no lz4 tool is available)."""
    i, n = 0, len(src)
    while i < n:
        tok = src[i]
        i += 1
        lit = tok >> 4
        if lit == 15:
            while True:
                b = src[i]
                i += 1
                lit += b
                if b != 255:
                    break
        out += src[i : i + lit]
        i += lit
        if i >= n:
            break
        off = src[i] | (src[i + 1] << 8)
        i += 2
        ml = tok & 15
        if ml == 15:
            while True:
                b = src[i]
                i += 1
                ml += b
                if b != 255:
                    break
        ml += 4
        start = len(out) - off
        if off >= ml:
            out += out[start : start + ml]
        else:
            for k in range(ml):
                out.append(out[start + k])


def _lz4_frame(data: bytes) -> bytes:
    out = bytearray()
    p = 0
    while p < len(data):
        magic = int.from_bytes(data[p : p + 4], "little")
        if 0x184D2A50 <= magic <= 0x184D2A5F:  # skippable frame
            size = int.from_bytes(data[p + 4 : p + 8], "little")
            p += 8 + size
            continue
        assert magic == 0x184D2204, "not an LZ4 frame"
        flg = data[p + 4]
        p += 6  # magic, FLG, BD
        if flg & 0x08:
            p += 8  # content size
        if flg & 0x01:
            p += 4  # dict id
        p += 1  # header checksum
        while True:
            bsize = int.from_bytes(data[p : p + 4], "little")
            p += 4
            if bsize == 0:
                break
            raw, bsize = bool(bsize & 0x80000000), bsize & 0x7FFFFFFF
            blk = data[p : p + bsize]
            p += bsize
            if raw:
                out += blk
            else:
                _lz4_block(blk, out)
            if flg & 0x10:
                p += 4
        if flg & 0x04:
            p += 4
    return bytes(out)


def read_index(path: str) -> str:
    if path.endswith(".gz"):
        with gzip.open(path, "rb") as f:
            data = f.read()
    elif path.endswith(".xz"):
        with lzma.open(path, "rb") as f:
            data = f.read()
    elif path.endswith(".bz2"):
        with bz2.open(path, "rb") as f:
            data = f.read()
    elif path.endswith(".lz4"):
        data = None
        for tool in (["/usr/lib/apt/apt-helper", "cat-file"], ["lz4", "-dc"]):
            if shutil.which(tool[0]) or os.path.exists(tool[0]):
                try:
                    data = subprocess.run([*tool, path], check=True, capture_output=True).stdout
                    break
                except (OSError, subprocess.CalledProcessError):
                    data = None
        if data is None:
            with open(path, "rb") as f:
                data = _lz4_frame(f.read())
    else:
        with open(path, "rb") as f:
            data = f.read()
    return data.decode("utf-8", "replace")


def parse_deb822(text: str):
    """Yield dicts of field -> value (continuation lines joined with newlines)."""
    cur: dict[str, str] = {}
    key = None
    for line in text.split("\n"):
        if not line.strip():
            if cur:
                yield cur
            cur, key = {}, None
            continue
        if line[0] in " \t":
            if key is not None:
                cur[key] += "\n" + line[1:]
            continue
        k, _, v = line.partition(":")
        key = k.strip()
        cur[key] = v.strip()
    if cur:
        yield cur


# --------------------------------------------------------------------------------------
# Debian version comparison (Policy 5.6.12)
# --------------------------------------------------------------------------------------
def _order(c: str) -> int:
    if c == "~":
        return -1
    if c.isdigit():
        return 0
    if c.isalpha():
        return ord(c)
    return ord(c) + 256


def _cmp_part(a: str, b: str) -> int:
    i = j = 0
    while i < len(a) or j < len(b):
        first_diff = 0
        while (i < len(a) and not a[i].isdigit()) or (j < len(b) and not b[j].isdigit()):
            ac = _order(a[i]) if i < len(a) and not a[i].isdigit() else 0
            bc = _order(b[j]) if j < len(b) and not b[j].isdigit() else 0
            if ac != bc:
                return ac - bc
            i += 1
            j += 1
        while i < len(a) and a[i] == "0":
            i += 1
        while j < len(b) and b[j] == "0":
            j += 1
        while i < len(a) and a[i].isdigit() and j < len(b) and b[j].isdigit():
            if not first_diff:
                first_diff = ord(a[i]) - ord(b[j])
            i += 1
            j += 1
        if i < len(a) and a[i].isdigit():
            return 1
        if j < len(b) and b[j].isdigit():
            return -1
        if first_diff:
            return first_diff
    return 0


def version_cmp(a: str, b: str) -> int:
    def split(v):
        e, _, rest = v.partition(":") if ":" in v else ("0", "", v)
        up, _, rev = rest.rpartition("-") if "-" in rest else (rest, "", "0")
        return int(e or 0), up, rev

    ea, ua, ra = split(a)
    eb, ub, rb = split(b)
    if ea != eb:
        return ea - eb
    return _cmp_part(ua, ub) or _cmp_part(ra, rb)


# --------------------------------------------------------------------------------------
# field helpers
# --------------------------------------------------------------------------------------
REL_ITEM = re.compile(
    r"^\s*([a-z0-9][a-z0-9+.\-]*)(?::[a-z0-9\-]+)?\s*(\([^)]*\))?\s*(\[[^\]]*\])?\s*(<[^>]*>)?\s*$"
)


def parse_rel(value: str) -> list[list[str]]:
    """'a (>= 1) | b, c' -> [['a', 'b'], ['c']] (architecture-qualified names reduced)."""
    groups = []
    for grp in value.replace("\n", " ").split(","):
        alts = []
        for alt in grp.split("|"):
            m = REL_ITEM.match(alt.strip().lower())
            if m:
                alts.append(m.group(1))
        if alts:
            groups.append(alts)
    return groups


MAINT_RE = re.compile(r"^\s*(.*?)\s*<([^>]+)>\s*$")


def parse_maint(value: str) -> tuple[str, str]:
    m = MAINT_RE.match(value.replace("\n", " "))
    if not m:
        return re.sub(r"\s+", " ", value).strip(), ""
    name = re.sub(r"\s+", " ", m.group(1)).strip().strip('"').strip()
    return name or m.group(2), m.group(2).strip().lower()


def is_team(name: str, email: str) -> bool:
    low = name.lower()
    return (
        bool(
            re.search(
                r"\b(team|group|maintainers|developers|project|packagers|"
                r"packaging|consortium|list)\b",
                low,
            )
        )
        or "lists." in email
        or email.startswith(("pkg-", "team+", "debian-"))
        or "@tracker.debian.org" in email
    )


def clean_long(desc: str) -> str:
    lines = []
    for ln in desc.split("\n")[1:]:
        ln = ln.strip()
        lines.append("" if ln == "." else ln)
    txt = " ".join(x for x in lines if x)
    return re.sub(r"\s+", " ", txt).strip()


# --------------------------------------------------------------------------------------
# loading
# --------------------------------------------------------------------------------------
def load_lists(lists_dir: str):
    files = sorted(glob.glob(os.path.join(lists_dir, "*_Packages*")))
    files = [
        f
        for f in files
        if not f.endswith((".diff", ".IndexDiff"))
        and re.search(r"_main_binary-(amd64|all)_Packages", os.path.basename(f))
    ]
    if not files:
        sys.exit(f"no *_main_binary-amd64_Packages index in {lists_dir}")
    pkgs: dict[str, dict] = {}
    for f in files:
        for st in parse_deb822(read_index(f)):
            name = st.get("Package")
            if not name or st.get("Architecture") not in ARCHES:
                continue
            sec = st.get("Section", "")
            if "/" in sec:  # component/section: keep main only
                comp, sec = sec.split("/", 1)
                if comp != "main":
                    continue
                st["Section"] = sec
            old = pkgs.get(name)
            if old is None or version_cmp(st.get("Version", "0"), old.get("Version", "0")) > 0:
                pkgs[name] = st
    # long descriptions: Translation-en indexes if present, then dpkg status
    long_by_md5: dict[str, str] = {}
    for f in sorted(glob.glob(os.path.join(lists_dir, "*_i18n_Translation-en*"))):
        for st in parse_deb822(read_index(f)):
            if "Description-md5" in st and "Description-en" in st:
                long_by_md5[st["Description-md5"]] = clean_long(st["Description-en"])
    long_by_name: dict[str, str] = {}
    status = "/var/lib/dpkg/status"
    if os.path.exists(status):
        for st in parse_deb822(read_index(status)):
            if st.get("Package") and "Description" in st and st.get("Architecture") in ARCHES:
                long_by_name[st["Package"]] = clean_long(st["Description"])
    # Sources indexes (optional)
    sources_meta: dict[str, dict] = {}
    for f in sorted(glob.glob(os.path.join(lists_dir, "*_main_source_Sources*"))):
        for st in parse_deb822(read_index(f)):
            if st.get("Package"):
                sources_meta[st["Package"]] = st
    return files, pkgs, long_by_md5, long_by_name, sources_meta


def src_of(st: dict) -> tuple[str, str]:
    s = st.get("Source", "").strip()
    if not s:
        return st["Package"], st.get("Version", "")
    m = re.match(r"^(\S+)(?:\s*\(([^)]*)\))?", s)
    return m.group(1), (m.group(2) or st.get("Version", "")).strip()


def h(x: str, seed: str) -> str:
    return hashlib.sha1((seed + "\0" + x).encode()).hexdigest()


# --------------------------------------------------------------------------------------
# subset selection
# --------------------------------------------------------------------------------------
def select(pkgs: dict, max_packages: int | None, seed: str) -> set[str]:
    if not max_packages or max_packages >= len(pkgs):
        return set(pkgs)
    providers = collections.defaultdict(list)
    for name, st in pkgs.items():
        for grp in parse_rel(st.get("Provides", "")):
            for p in grp:
                providers[p].append(name)
    prio_rank = {"required": 0, "important": 1, "standard": 2, "optional": 3, "extra": 4}
    for p in providers:
        providers[p].sort(key=lambda n: (prio_rank.get(pkgs[n].get("Priority"), 5), n))
    by_src = collections.defaultdict(list)
    for name, st in pkgs.items():
        by_src[src_of(st)[0]].append(name)
    chosen: set[str] = set()

    def close(start: list[str]):
        stack = list(start)
        while stack:
            n = stack.pop()
            if n in chosen:
                continue
            chosen.add(n)
            st = pkgs[n]
            for fld in ("Pre-Depends", "Depends"):
                for alts in parse_rel(st.get(fld, "")):
                    pick = None
                    for a in alts:  # first satisfiable alternative
                        if a in pkgs:
                            pick = a
                            break
                        if providers.get(a):
                            pick = providers[a][0]
                            break
                    if pick and pick not in chosen:
                        stack.append(pick)

    for src in sorted(by_src, key=lambda s: h(s, seed)):
        if len(chosen) >= max_packages:
            break
        close(sorted(by_src[src]))
    return chosen


# --------------------------------------------------------------------------------------
# build
# --------------------------------------------------------------------------------------
def build(lists_dir: str, out_dir: str, max_packages: int | None, seed: str) -> dict:
    t0 = time.time()
    files, pkgs, long_by_md5, long_by_name, sources_meta = load_lists(lists_dir)
    t_load = time.time() - t0
    chosen = select(pkgs, max_packages, seed)

    nodes: list[dict] = []
    key2id: dict[tuple[str, str], int] = {}

    def add(ntype: str, name: str, attrs: dict, text: str) -> int:
        k = (ntype, name)
        if k in key2id:
            return key2id[k]
        key2id[k] = len(nodes)
        nodes.append(
            {
                "id": len(nodes),
                "type": ntype,
                "name": name,
                "attrs": {a: v for a, v in attrs.items() if v is not None and v != ""},
                "text": text,
            }
        )
        return key2id[k]

    names = sorted(chosen)
    # --- maintainers: identified by display name, email = most frequent address
    maint_emails = collections.defaultdict(collections.Counter)
    pkg_maint = {}
    for n in names:
        mname, email = parse_maint(pkgs[n].get("Maintainer", "unknown"))
        pkg_maint[n] = mname
        maint_emails[mname][email] += 1
    # --- sources
    src_bins = collections.defaultdict(list)
    src_ver: dict[str, str] = {}
    for n in names:
        s, v = src_of(pkgs[n])
        src_bins[s].append(n)
        if s not in src_ver or version_cmp(v, src_ver[s]) > 0:
            src_ver[s] = v
    # --- virtual packages: provided names that are no real package in the archive
    virt_prov = collections.defaultdict(list)
    for n in names:
        for grp in parse_rel(pkgs[n].get("Provides", "")):
            for p in grp:
                if p not in pkgs and p != n:
                    virt_prov[p].append(n)

    # keep only virtual names that matter: offered by 2+ packages or named in a relationship
    # field of another selected package (drops the thousands of per-feature Rust/Go names)
    referenced = set()
    for n in names:
        for fld in REL_FIELDS:
            for alts in parse_rel(pkgs[n].get(fld, "")):
                referenced.update(a for a in alts if a in virt_prov and n not in virt_prov[a])
    virt_prov = {v: p for v, p in virt_prov.items() if len(set(p)) >= 2 or v in referenced}

    def pkg_text(n: str) -> str:
        st = pkgs[n]
        short = st.get("Description", "").split("\n")[0].strip()
        long = long_by_name.get(n) or long_by_md5.get(st.get("Description-md5", ""), "")
        if not long and "\n" in st.get("Description", ""):
            long = clean_long(st["Description"])
        return f"{short}. {long}".strip() if long else short

    # package nodes
    for n in names:
        st = pkgs[n]
        attrs = {
            "version": st.get("Version"),
            "architecture": st.get("Architecture"),
            "priority": st.get("Priority"),
            "installed_size": int(st["Installed-Size"]) if st.get("Installed-Size", "").isdigit() else None,
            "multi_arch": st.get("Multi-Arch"),
            "homepage": st.get("Homepage"),
            "source": src_of(st)[0],
        }
        if st.get("Essential", "").lower() == "yes":
            attrs["essential"] = True
        if st.get("Build-Essential", "").lower() == "yes":
            attrs["build_essential"] = True
        if st.get("Protected", st.get("Important", "")).lower() == "yes":
            attrs["protected"] = True
        add("package", n, attrs, pkg_text(n))
    # source nodes
    for s in sorted(src_bins):
        bins = sorted(src_bins[s])
        mcount = collections.Counter(pkg_maint[b] for b in bins)
        mname = mcount.most_common(1)[0][0]
        email = maint_emails[mname].most_common(1)[0][0]
        shorts = []
        for b in bins[:12]:
            d = pkgs[b].get("Description", "").split("\n")[0].strip()
            shorts.append(f"{b} ({d})" if d else b)
        more = f" and {len(bins) - 12} more" if len(bins) > 12 else ""
        text = (
            f"Source package {s}, building {len(bins)} binary package"
            f"{'s' if len(bins) != 1 else ''}: " + "; ".join(shorts) + more + "."
        )
        homepage = next((pkgs[b].get("Homepage") for b in bins if pkgs[b].get("Homepage")), None)
        smeta = sources_meta.get(s, {})
        add(
            "source_package",
            s,
            {
                "version": smeta.get("Version") or src_ver[s],
                "maintainer_email_domain": email.split("@")[-1] if "@" in email else None,
                "binary_count": len(bins),
                "homepage": homepage,
            },
            text,
        )
    # maintainers
    m_src_count = collections.Counter()
    for bins in src_bins.values():
        m_src_count[collections.Counter(pkg_maint[b] for b in bins).most_common(1)[0][0]] += 1
    for m in sorted(maint_emails):
        email = maint_emails[m].most_common(1)[0][0]
        team = is_team(m, email)
        npk = sum(maint_emails[m].values())
        add(
            "maintainer",
            m,
            {
                "email": email,
                "email_domain": email.split("@")[-1] if "@" in email else None,
                "is_team": team,
                "package_count": npk,
            },
            f"{m} <{email}>, a Debian {'packaging team' if team else 'maintainer'} responsible "
            f"for {npk} binary package{'s' if npk != 1 else ''} from "
            f"{m_src_count[m]} source package{'s' if m_src_count[m] != 1 else ''}.",
        )
    # sections
    sec_count = collections.Counter(pkgs[n].get("Section", "misc") for n in names)
    for s in sorted(sec_count):
        add(
            "section",
            s,
            {"package_count": sec_count[s]},
            f"Archive section {s}: " + SECTION_TEXT.get(s, f"packages about {s}."),
        )
    # debtags
    tag_count = collections.Counter()
    pkg_tags = {}
    for n in names:
        tags = [t.strip() for t in pkgs[n].get("Tag", "").replace("\n", " ").split(",") if t.strip()]
        pkg_tags[n] = tags
        tag_count.update(tags)
    for t in sorted(tag_count):
        facet, _, value = t.partition("::")
        add(
            "debtag",
            t,
            {"facet": facet, "value": value, "package_count": tag_count[t]},
            f"Debtag {t}: facet '{facet}' ({FACET_TEXT.get(facet, facet)}), value '{value}'.",
        )
    # virtual packages
    for v in sorted(virt_prov):
        provs = sorted(set(virt_prov[v]))
        add(
            "virtual_package",
            v,
            {"provider_count": len(provs)},
            f"Virtual package {v}, provided by "
            + ", ".join(provs[:10])
            + (f" and {len(provs) - 10} more" if len(provs) > 10 else "")
            + ".",
        )

    # ---------------- edges
    edges: set[tuple[int, str, int]] = set()

    def target_id(name: str):
        if name in chosen:
            return key2id[("package", name)]
        if ("virtual_package", name) in key2id:
            return key2id[("virtual_package", name)]
        return None

    for n in names:
        st = pkgs[n]
        pid = key2id[("package", n)]
        for fld, et in REL_FIELDS.items():
            for alts in parse_rel(st.get(fld, "")):
                for a in alts:
                    if a == n:
                        continue
                    tid = target_id(a)
                    if tid is not None:
                        edges.add((pid, et, tid))
        for grp in parse_rel(st.get("Provides", "")):
            for a in grp:
                if a != n:
                    tid = target_id(a)
                    if tid is not None:
                        edges.add((pid, "provides", tid))
        s, _ = src_of(st)
        edges.add((pid, "built_from", key2id[("source_package", s)]))
        for grp in parse_rel(st.get("Built-Using", "")):
            for a in grp:
                if ("source_package", a) in key2id:
                    edges.add((pid, "built_using", key2id[("source_package", a)]))
        edges.add((pid, "maintained_by", key2id[("maintainer", pkg_maint[n])]))
        edges.add((pid, "in_section", key2id[("section", st.get("Section", "misc"))]))
        for t in pkg_tags[n]:
            edges.add((pid, "tagged", key2id[("debtag", t)]))
    for s, bins in src_bins.items():
        mname = collections.Counter(pkg_maint[b] for b in bins).most_common(1)[0][0]
        edges.add((key2id[("source_package", s)], "maintained_by", key2id[("maintainer", mname)]))

    # ---------------- write
    schema = bundle_writer.expand_schema(SCHEMA)
    bundle_writer.write_bundle(out_dir, schema, nodes, edges)
    stats = {
        "lists": [os.path.basename(x) for x in files],
        "archive_packages": len(pkgs),
        "selected_packages": len(chosen),
        "max_packages": max_packages,
        "seed": seed,
        "long_descriptions": sum(
            1 for n in names if n in long_by_name or pkgs[n].get("Description-md5") in long_by_md5
        ),
        "nodes": len(nodes),
        "edges": len(edges),
        "nodes_by_type": dict(collections.Counter(n["type"] for n in nodes)),
        "edges_by_type": dict(collections.Counter(e[1] for e in edges)),
        "seconds_load": round(t_load, 1),
        "seconds_total": round(time.time() - t0, 1),
    }
    bundle_writer.write_stats(out_dir, stats)
    return stats


def options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument(
        "--max-packages",
        type=int,
        default=34000,
        help="packages to keep (deterministic sample of source packages plus their "
        "Depends closure); 0 keeps the whole archive (default 34000)",
    )
    ap.add_argument("--seed", default="skb-heldout-1")


def main():
    bundle_writer.builder_main(
        __doc__,
        "lists_dir",
        lambda a: build(a.lists_dir, a.out_dir, a.max_packages or None, a.seed),
        options,
        unique_names=True,
    )


if __name__ == "__main__":
    main()
