"""Where the Kafka broker plugin's jar is (kafka-plugin/, built by `make setup`), and building it when its sources
are newer, for the plugin benchmark and the broker tests.

Stateless functions; a build runs Maven in a child process.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PLUGIN_DIR = REPO_ROOT / "kafka-plugin"
PLUGIN_VERSION = "0.1.0"
PLUGIN_JAR = PLUGIN_DIR / "target" / f"kraft-acl-kafka-plugin-{PLUGIN_VERSION}.jar"
TEST_CLASSES = PLUGIN_DIR / "target" / "test-classes"
KAFKA_SCRIPT = REPO_ROOT / "scripts" / "kafka-broker.sh"
#: The plugin's authorizer class for Kafka 4.1 and later (it registers the broker's plugin metrics, KIP-877).
AUTHORIZER_CLASS = "io.github.kraftacl.plugin.KraftAclAuthorizer"
#: The one for Kafka 4.0, which has no plugin metrics (a class implementing Monitorable cannot load there).
AUTHORIZER_CLASS_KAFKA_40 = "io.github.kraftacl.plugin.KraftAclAuthorizerKafka40"


def authorizer_class(kafka_version: str) -> str:
    """The plugin class a broker of this Kafka release names in `authorizer.class.name`."""
    return AUTHORIZER_CLASS_KAFKA_40 if kafka_version.startswith("4.0.") else AUTHORIZER_CLASS


def kafka_script(*args: str) -> str:
    """One line scripts/kafka-broker.sh prints for `version` or `libdir` (the pom holds the default release)."""
    proc = subprocess.run(["bash", str(KAFKA_SCRIPT), *args], capture_output=True, text=True, check=True, timeout=30)
    return proc.stdout.strip()


def kafka_lib(kafka_version: str | None = None) -> Path:
    """The directory of a Kafka release's jars (the default release when None), as the script fetches them."""
    return Path(kafka_script("libdir", *(["--kafka-version", kafka_version] if kafka_version else [])))


class PluginBuildError(RuntimeError):
    """The plugin could not be built (no Maven, or the build failed); the message has Maven's output."""


def stale() -> bool:
    """True when the jar or its test classes are missing or older than a source file or the pom."""
    if not PLUGIN_JAR.is_file() or not TEST_CLASSES.is_dir():
        return True
    built = min(PLUGIN_JAR.stat().st_mtime, TEST_CLASSES.stat().st_mtime)
    sources = [PLUGIN_DIR / "pom.xml", *PLUGIN_DIR.joinpath("src").rglob("*.java")]
    return any(p.stat().st_mtime > built for p in sources)


def ensure_built(timeout: float = 900.0) -> Path:
    """The jar, built first (`mvn package`, unit tests skipped) when it is stale."""
    if not stale():
        return PLUGIN_JAR
    mvn = shutil.which("mvn")
    if mvn is None:
        raise PluginBuildError(f"no mvn on PATH to build {PLUGIN_JAR} (make setup builds it)")
    cmd = [mvn, "-B", "-q", "-Dstyle.color=never", "-f", str(PLUGIN_DIR / "pom.xml"), "package", "-DskipTests"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0 or not PLUGIN_JAR.is_file():
        raise PluginBuildError(f"`{' '.join(cmd)}` failed:\n{(proc.stdout + proc.stderr)[-4000:]}")
    PLUGIN_JAR.touch()
    TEST_CLASSES.touch()
    return PLUGIN_JAR
