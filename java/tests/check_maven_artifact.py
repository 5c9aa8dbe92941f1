"""dev.ribbon:ribbon as a Maven artifact, checked without Maven (none is reachable here).

    check_maven_artifact.py MAVEN_REPOSITORY RIBBON_CLI

MAVEN_REPOSITORY is the build's java/maven (cmake/RibbonMavenArtifact.cmake): its
dev/ribbon/ribbon/VERSION/ must hold ribbon-VERSION.jar, -sources.jar and .pom, VERSION
being `ribbon --version`'s; the pom names the coordinates, the Apache-2.0 license and the
dependencies below, the jar carries the same pom, pom.properties, LICENSE and NOTICE as
Maven's jar plugin writes them, and the sources jar has a source for every class. Prints each
problem and exits 1 where any. python/tests/test_version.py checks the installed ribbon.jar
with check_jar.
"""

import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile

GROUP, ARTIFACT = "dev.ribbon", "ribbon"
LICENSE = "Apache-2.0"
# Everything the jar needs beyond the JDK, by scope: the reader's XXH64, and Spark for the SQL
# functions (where they run, Spark is there).
DEPENDENCIES = {("org.lz4", "lz4-java"): "compile", ("org.apache.spark", "spark-sql_2.13"): "provided"}
POM_IN_JAR = f"META-INF/maven/{GROUP}/{ARTIFACT}/pom.xml"
PROPERTIES_IN_JAR = f"META-INF/maven/{GROUP}/{ARTIFACT}/pom.properties"
NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def check_pom(pom, version):
    """Problems of the pom's bytes: coordinates, version, license, dependencies."""
    root = ET.fromstring(pom)
    found = {tag: root.findtext(f"m:{tag}", namespaces=NS) for tag in ("groupId", "artifactId", "version")}
    problems = []
    if found != {"groupId": GROUP, "artifactId": ARTIFACT, "version": version}:
        problems.append(f"pom coordinates {found}, not {GROUP}:{ARTIFACT}:{version}")
    licenses = [e.text for e in root.findall("m:licenses/m:license/m:name", NS)]
    if licenses != [LICENSE]:
        problems.append(f"pom licenses {licenses}, not [{LICENSE!r}]")
    dependencies = {
        (d.findtext("m:groupId", namespaces=NS), d.findtext("m:artifactId", namespaces=NS)):
            d.findtext("m:scope", default="compile", namespaces=NS)
        for d in root.findall("m:dependencies/m:dependency", NS)}
    if dependencies != DEPENDENCIES:
        problems.append(f"pom dependencies {dependencies}, not {DEPENDENCIES}")
    return problems


def read_properties(text):
    pairs = (line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))
    return {key.strip(): value.strip() for key, value in pairs}


def check_jar(jar, version, license_text):
    """Problems of a ribbon.jar: the pom and pom.properties in its META-INF, the license."""
    with zipfile.ZipFile(jar) as archive:
        names = set(archive.namelist())
        missing = {POM_IN_JAR, PROPERTIES_IN_JAR, "META-INF/LICENSE", "META-INF/NOTICE"} - names
        if missing:
            return [f"{jar} lacks {sorted(missing)}"]
        problems = check_pom(archive.read(POM_IN_JAR), version)
        properties = read_properties(archive.read(PROPERTIES_IN_JAR).decode())
        if properties != {"groupId": GROUP, "artifactId": ARTIFACT, "version": version}:
            problems.append(f"pom.properties {properties}")
        if archive.read("META-INF/LICENSE").decode() != license_text:
            problems.append("META-INF/LICENSE is not the repository's LICENSE")
        manifest = archive.read("META-INF/MANIFEST.MF").decode().splitlines()
        for line in (f"Implementation-Version: {version}", f"Bundle-License: {LICENSE}"):
            if line not in manifest:
                problems.append(f"the manifest lacks '{line}'")
    return problems


def check_sources_jar(sources_jar, jar):
    """Problems of the sources jar: a .java for each top-level class of the jar, the license."""
    with zipfile.ZipFile(jar) as archive:
        classes = {n[:-len(".class")] for n in archive.namelist() if n.endswith(".class") and "$" not in n}
    with zipfile.ZipFile(sources_jar) as archive:
        names = set(archive.namelist())
    problems = [f"{sources_jar} has no {c}.java" for c in sorted(classes) if f"{c}.java" not in names]
    if not {"META-INF/LICENSE", "META-INF/NOTICE"} <= names:
        problems.append(f"{sources_jar} lacks META-INF/LICENSE or NOTICE")
    return problems


def check_repository(repository, version, license_text):
    base = pathlib.Path(repository, *GROUP.split("."), ARTIFACT, version, f"{ARTIFACT}-{version}")
    paths = {kind: base.with_name(base.name + suffix)
             for kind, suffix in (("jar", ".jar"), ("sources", "-sources.jar"), ("pom", ".pom"))}
    missing = [str(p) for p in paths.values() if not p.is_file()]
    if missing:
        return [f"missing {missing} (another version, or no Maven layout?)"]
    problems = check_pom(paths["pom"].read_bytes(), version)
    problems += check_jar(paths["jar"], version, license_text)
    with zipfile.ZipFile(paths["jar"]) as archive:
        if archive.read(POM_IN_JAR) != paths["pom"].read_bytes():
            problems.append(f"{paths['pom']} differs from the jar's {POM_IN_JAR}")
    return problems + check_sources_jar(paths["sources"], paths["jar"])


def main(repository, cli):
    version = subprocess.run([cli, "--version"], check=True, capture_output=True,
                             text=True).stdout.splitlines()[0]
    license_text = (pathlib.Path(__file__).resolve().parents[2] / "LICENSE").read_text()
    problems = check_repository(repository, version, license_text)
    for problem in problems:
        print("error:", problem, file=sys.stderr)
    if problems:
        return 1
    print(f"{GROUP}:{ARTIFACT}:{version} in {repository}: pom, jar, sources jar and license agree")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
