#!/usr/bin/env python3
"""Does every Spark member that ribbon.jar calls exist in a real Spark?

ribbon.jar's Spark classes are compiled against compile-only stubs (java/src/spark-api): a
stub whose signature differs from Spark's compiles, then fails in Spark with NoSuchMethodError
or IncompatibleClassChangeError. This resolves each class, method and field reference of the
jar's dev/ribbon/spark classes in the given Spark jars, as the JVM's linker would (the member
with that name and descriptor in the class or its supertypes; interface methods on
interfaces), with the JDK's javap reading both sides.

    check_spark_links.py JAVAP RIBBON_JAR SPARK_JARS_DIR

Exit 0: all resolve (the count is printed); 1: the unresolved references are listed.
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile

REFERENCE = re.compile(r"= (Methodref|InterfaceMethodref|Fieldref|Class)\s+\S+\s+// (.*)$")
HEADER = re.compile(r"^(?:[\w ]*?)\b(class|interface) ([\w.$]+)(?:<.*?>)?(?: extends ([^{]*?))?(?: implements ([^{]*))? \{$")
MEMBER_DESCRIPTOR = re.compile(r"^\s+descriptor: (\S+)$")


def javap(tool: str, classpath: str, names, *flags) -> str:
    run = subprocess.run([tool, *flags, "-cp", classpath, *names], capture_output=True, text=True)
    return run.stdout + run.stderr


def spark_references(tool: str, jar: str):
    """{(kind, owner, member descriptor or None)} of the jar's dev/ribbon/spark classes."""
    with zipfile.ZipFile(jar) as z:
        classes = [n[:-6].replace("/", ".") for n in z.namelist()
                   if n.startswith("dev/ribbon/spark/") and n.endswith(".class")]
    if not classes:
        sys.exit(f"error: {jar} holds no dev/ribbon/spark classes")
    found = set()
    for line in javap(tool, jar, classes, "-v").splitlines():
        m = REFERENCE.search(line)
        if not m or not m.group(2).lstrip('"[L').startswith("org/apache/spark/"):
            continue
        kind, target = m.groups()
        if kind == "Class":
            owner = target.strip('"').lstrip("[").removeprefix("L").removesuffix(";")
            found.add((kind, owner.replace("/", "."), None))
        else:
            owner, member = target.split(".", 1)
            found.add((kind, owner.replace("/", "."), member.replace('"', "")))
    return found


def strip_generics(text: str) -> str:
    while "<" in text:
        text = re.sub(r"<[^<>]*>", "", text)
    return text


def load_types(tool: str, classpath: str, names, types):
    """Adds {name: (is_interface, supertypes, {member name:descriptor})} for names to types
    (one javap run; a name javap does not find stays absent)."""
    current = None
    name = None
    for line in javap(tool, classpath, sorted(names), "-p", "-s").splitlines():
        header = HEADER.match(strip_generics(line))
        if header:
            kind, current, extends, implements = header.groups()
            supers = [s.strip() for part in (extends, implements) if part for s in part.split(",")]
            types[current] = (kind == "interface", supers, set())
            continue
        if current is None:
            continue
        descriptor = MEMBER_DESCRIPTOR.match(line)
        if descriptor and name:
            types[current][2].add(name + ":" + descriptor.group(1))
            name = None
        elif line.strip().endswith(";"):
            name = member_name(line, current)


def member_name(line: str, owner: str):
    """The name a javap -p member line declares ('<init>' for constructors)."""
    text = strip_generics(line.strip().rstrip(";"))
    text = re.sub(r" throws .*$", "", text)
    head = text.split("(", 1)[0].split()
    if not head:
        return None
    last = head[-1]
    return "<init>" if last == owner else last.split(".")[-1]


def resolves(load, types, owner: str, member: str) -> bool:
    """Is member declared by owner or a supertype (loaded as needed, through load)?"""
    if owner not in types:
        return False
    _, supers, members = types[owner]
    if member in members:
        return True
    missing = [s for s in supers if s not in types]
    if missing:
        load(missing)
    return any(resolves(load, types, s, member) for s in supers)


def main() -> int:
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    tool, jar, spark_dir = sys.argv[1:]
    references = spark_references(tool, jar)
    types = {}
    classpath = spark_dir.rstrip("/") + "/*"

    def load(names):
        load_types(tool, classpath, names, types)

    load({owner for _, owner, _ in references})
    broken = []
    for kind, owner, member in sorted(references, key=lambda r: (r[1], r[2] or "")):
        if owner not in types:
            broken.append(f"{owner}: no such class")
        elif member is None:
            continue
        elif kind == "Methodref" and types[owner][0]:
            broken.append(f"{owner}.{member}: called as a class method, but {owner} is an interface")
        elif kind == "InterfaceMethodref" and not types[owner][0]:
            broken.append(f"{owner}.{member}: called as an interface method, but {owner} is a class")
        elif not resolves(load, types, owner, member):
            broken.append(f"{owner}.{member}: not found in the class or its supertypes")
    for line in broken:
        print("unresolved:", line)
    print(f"{len(references) - len(broken)} of {len(references)} Spark references of {jar} resolve in {spark_dir}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
