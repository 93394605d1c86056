"""Shared fixtures: repository paths, the CLI as a subprocess, and a scratch copy of the workflow."""

from __future__ import annotations

import atexit
import compileall
import contextlib
import fcntl
import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
DEMO_JSONL = REPO / "data" / "raw" / "demo.jsonl"
GPT2 = REPO / "data" / "tokenizers" / "gpt2.tokenizer.json"
TEKKEN = DATA / "tekken.tokenizer.json"
MIXED_JSONL = DATA / "mixed.jsonl"
GPT2_EOD = "<|endoftext|>"
GPT2_EOD_ID = 50256


def pytest_configure(config):
    """With pytest-xdist, one test at a time to each worker (``--maxschedchunk=1``) unless told otherwise: by
    default a worker is sent a quarter of the suite at once, and with the slow tests collected first (below)
    one worker got nearly all of them. What several tests share and costs seconds to make (a build, tokenizer
    folders, sidecars) is made once per run for every worker (:func:`built_once`), so every test may go to any
    worker.

    Where Python is told not to write bytecode (PYTHONDONTWRITEBYTECODE, as CI's machines set it), src/ is
    compiled once here, before any worker starts: else each of the suite's ~600 Snakemake and job processes
    compiles every tokenmill module it imports again (a demo build: 4.1 CPU-s instead of 3.6)."""
    if getattr(config.option, "maxschedchunk", 0) is None:
        config.option.maxschedchunk = 1
    if sys.dont_write_bytecode and not hasattr(config, "workerinput"):
        compileall.compile_dir(REPO / "src", quiet=1)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session):
    """The test modules as pytest rewrote their asserts, kept in its cache (``__pycache__/*-pytest-*.pyc``, keyed
    by each file's hash) and read from there by the next run and by every xdist worker after the first: where
    Python is told not to write bytecode (PYTHONDONTWRITEBYTECODE), pytest rewrote all ~210 of them again in
    every worker of every run (~4 CPU-s each). Only while the tests are collected; the tests' own subprocesses
    keep the environment's setting. Assertion messages are pytest's as before (the same rewrite)."""
    dont_write_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, False
    try:
        return (yield)
    finally:
        sys.dont_write_bytecode = dont_write_bytecode


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: `pytest -p no:xdist` runs without it
def pytest_xdist_auto_num_workers(config):
    """``-n auto``: a worker per core this process may use, and one more where slow tests run. A few of them
    mostly wait (SLURM's status checks, pip, the S3 server), and a core idled meanwhile (2 cores, SLURM
    included: 421 s with 2 workers, 376 s with 3). The quick loop only pays the third worker's start-up."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores + ("not slow" not in (config.option.markexpr or ""))


def pytest_collection_modifyitems(config, items):
    """`slow` for every test that builds through Snakemake or installs into a venv, so that
    `python -m pytest -m "not slow"` is the quick loop (see pyproject.toml's markers); and the slow tests
    first, so that pytest-xdist hands them out while every worker is free and the many short tests fill
    in after them: handed out last, one long test kept one core busy alone at the end."""
    for item in items:
        if {"workflow_dir", "shared_demo_build"} & set(getattr(item, "fixturenames", ())) or \
                item.module.__name__ in ("test_install", "test_slurm", "test_sge"):
            item.add_marker(pytest.mark.slow)
        if item.module.__name__ in ("test_slurm", "test_sge"):
            item.add_marker(getattr(pytest.mark, item.module.__name__[len("test_"):]))
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


# Snakemake on 2 cores, as CI has. Its default job rate limit (100/1s) leaves a 1 s timer running after
# the last job, which holds every run open for up to a second after it has finished; a local run needs no
# rate limit (the default profile sets the same).
SNAKEMAKE = [sys.executable, "-m", "snakemake", "--cores", "2", "--max-jobs-per-timespan", "1000/0s"]
# What Snakemake prints first when it finds the workflow's profiles/default next to the Snakefile by itself
PROFILE_NOTICE = "Using workflow specific profile profiles/default for setting default command line arguments."


def tool_env() -> dict:
    """Environment in which `tokenmill` and `snakemake` of this interpreter come first on PATH."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def run_tokenmill(*args, check: bool = True, cwd: Path | None = None,
                  isolated: bool = False) -> subprocess.CompletedProcess:
    """Run the `tokenmill` CLI (in ``cwd``); with ``check``, fail the test on a non-zero exit.

    In this process (``cli.main`` with its streams captured): a process per call cost the suite
    ~0.5 s each in imports and tokenizer loads. ``isolated`` runs it as a subprocess instead, for what
    only a process shows: its exit under a signal, its environment, its own imports."""
    if isolated:
        result = subprocess.run([sys.executable, "-m", "tokenmill.cli", *map(str, args)], capture_output=True,
                                text=True, env=tool_env(), cwd=cwd)
    else:
        result = _run_in_process([str(arg) for arg in args], cwd)
    if check and result.returncode != 0:
        raise AssertionError(f"tokenmill {' '.join(map(str, args))} failed:\n{result.stderr}")
    return result


def _run_in_process(args: list[str], cwd: Path | None) -> subprocess.CompletedProcess:
    import contextlib
    import io

    from tokenmill import cli

    stdout, stderr = io.StringIO(), io.StringIO()
    previous = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                code = cli.main(args)
            except SystemExit as exit_:  # argparse's usage errors
                code = exit_.code if isinstance(exit_.code, int) else 1
    finally:
        os.chdir(previous)
    return subprocess.CompletedProcess(["tokenmill", *args], code, stdout.getvalue(), stderr.getvalue())


# The demo as Megatron datasets, relative to a work folder (so that they are hashed as spelled here), and
# its documents 0-1,499 and 1,500-2,989 as two blend parts.
DEMO_PREFIX, PART_A_PREFIX, PART_B_PREFIX = (f"data/megatron/{name}_text_document"
                                            for name in ("demo", "demo_a", "demo_b"))


def make_demo_megatron(root: Path) -> Path:
    """Pack and convert the demo with the tokenmill CLI into ``root/DEMO_PREFIX`` (GPT-2, eod
    ``<|endoftext|>``), and write its two halves as ``PART_A_PREFIX`` and ``PART_B_PREFIX``."""
    from tokenmill.formats.bin_idx import MMapIndexedDataset, MMapIndexedDatasetBuilder

    (root / "data/megatron").mkdir(parents=True, exist_ok=True)
    run_tokenmill("pack", DEMO_JSONL, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", root / "demo.pbin")
    run_tokenmill("to-megatron", root / "demo.pbin", "-o", root / DEMO_PREFIX)
    demo = MMapIndexedDataset(root / DEMO_PREFIX)
    for prefix, documents in ((PART_A_PREFIX, range(0, 1500)), (PART_B_PREFIX, range(1500, len(demo)))):
        with MMapIndexedDatasetBuilder(root / prefix, demo.dtype) as builder:
            for document in documents:
                builder.add_document(demo[document], [demo.sizes[document]])
    return root


@pytest.fixture(scope="session")
def shared_demo_megatron(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """:func:`make_demo_megatron`'s folder (demo.pbin among it), made once per run for every xdist worker (the
    demo's pack: ~2 CPU-s). Read only: a test that writes beside it takes a copy (:func:`copy_built`)."""
    return built_once(request.config, tmp_path_factory, "demo-megatron", make_demo_megatron)


def run_tokenmill_with_file_size_limit(limit: int, *args) -> subprocess.CompletedProcess:
    """Run the `tokenmill` CLI where no file may grow past ``limit`` bytes: what a disk that fills up
    at that size looks like to a writer (EFBIG, "File too large", where it would get ENOSPC)."""
    import resource
    import signal

    def file_size_limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an error from write() instead of a signal
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run([sys.executable, "-m", "tokenmill.cli", *map(str, args)], preexec_fn=file_size_limit,
                          capture_output=True, text=True, env=tool_env())


def write_jsonl_bytes(path: Path, lines: list[bytes], final_newline: bool = True) -> Path:
    path.write_bytes(b"\n".join(lines) + (b"\n" if final_newline else b""))
    return path


@pytest.fixture
def workflow_dir(tmp_path: Path) -> Path:
    """A scratch copy of the workflow with the bundled demo inputs."""
    return _copy_workflow(tmp_path)


def built_once(config: pytest.Config, tmp_path_factory: pytest.TempPathFactory, name: str,
               make: Callable[[Path], None]) -> Path:
    """The folder ``name`` that ``make`` fills, made once per test run however many tests and xdist workers
    ask for it: the first makes it under a lock, the others wait and take it. Tests start from a copy
    (:func:`copy_built`) and never change it. A build that several tests begin from costs one Snakemake
    run, not one per test."""
    base = tmp_path_factory.getbasetemp()
    run_root = base.parent if hasattr(config, "workerinput") else base  # pytest-N, every worker's parent
    folder, done = run_root / name, run_root / f"{name}.done"
    with open(run_root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            make(folder)
            done.touch()
    return folder


def copy_built(source: Path, target: Path) -> Path:
    """``source`` copied to ``target`` with its files' times (and Snakemake's records under .snakemake/):
    to Snakemake the copy is the same build, up to date."""
    shutil.copytree(source, target, symlinks=True)
    return target


@contextlib.contextmanager
def local_cluster(script: Path, opt_in: str, answers: bool, needs: str):
    """A one-machine scheduler for a module's test, by ``script`` (``.ci/<name>-local.sh start|stop``): the one
    that ``answers`` already, else one that the script installs and starts, only where the environment variable
    ``opt_in`` is 1; then stopped, where it was started here. Skips, saying why, without the variable
    (``needs``: what setting one up installs) or where the script exits 3 (it cannot be set up here)."""
    if not answers and os.environ.get(opt_in) != "1":
        pytest.skip(f"no {script.stem.removesuffix('-local').upper()} answers, and setting one up installs {needs} "
                    f"and starts their daemons: set {opt_in}=1 to allow it")
    started = subprocess.run(["bash", str(script), "start"], capture_output=True, text=True)
    if started.returncode == 3:
        pytest.skip(f"not here: {started.stderr.strip()}")  # the script's own line names the scheduler
    assert started.returncode == 0, started.stderr
    yield
    if not answers:  # stop only what this test started
        subprocess.run(["bash", str(script), "stop"], check=True, capture_output=True)


def python_with_extra(extra: str, module: str, folder: Path) -> str:
    """An interpreter with this one's packages and those of pyproject's extra ``extra``: this one where it
    imports ``module`` already, else a venv made in ``folder`` whose .pth adds this venv's site-packages, with
    the extra's requirements installed by pip (which counts what it sees there as installed, and adds only
    what is missing). For the cluster executor plugins, which the `test` extra leaves out: Snakemake
    imports every installed executor plugin at each start."""
    if importlib.util.find_spec(module) is not None:
        return sys.executable
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    site_packages = next((folder / "lib").glob("python*/site-packages"))
    (site_packages / "tokenmill-test-venv.pth").write_text(
        f"import site; site.addsitedir({sysconfig.get_path('purelib')!r})\n")  # .pth files there run too
    requirements = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"][extra]
    python = str(folder / "bin" / "python")
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "-q",
                                *(wanted for wanted in requirements if not wanted.startswith("tokenmill"))],
                               capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr
    return python


def built_outputs(workdir: Path) -> dict[str, bytes]:
    """Every output of a demo build under data/ (the verify stamps excepted: they hold timings), by relative path."""
    built = {}
    for folder in ("index", "packed", "megatron", "cache", "sft", "report"):
        for path in sorted((workdir / "data" / folder).rglob("*")):
            if path.is_file():
                built[str(path.relative_to(workdir))] = path.read_bytes()
    return built


def _copy_workflow(folder: Path) -> Path:
    for name in ("Snakefile", "workflow", "config", "profiles"):
        source = REPO / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, folder / name)
    for name in ("raw", "tokenizers"):
        shutil.copytree(REPO / "data" / name, folder / "data" / name)
    shutil.copy(REPO / "environment.yml", folder / "environment.yml")
    return folder


@pytest.fixture
def shared_demo_build(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The workflow with the demo config built in a copy, once per test run, as a user builds it: first
    ``snakemake data/packed/demo.pbin`` alone, with a progress line at every batch in its log and on its console
    (kept: :func:`demo_first_run`), then ``snakemake``, the rest of the matrix. Read only."""
    def build(folder: Path) -> None:
        folder.mkdir()
        _copy_workflow(folder)
        with pytest.MonkeyPatch.context() as environment:
            environment.setenv("TOKENMILL_PROGRESS_SECONDS", "0")
            environment.setenv("TOKENMILL_CONSOLE_SECONDS", "0")
            first = run_snakemake(folder, "data/packed/demo.pbin")
        folder.with_name(f"{folder.name}.first-run.stderr").write_text(first.stderr)
        run_snakemake(folder)

    return built_once(request.config, tmp_path_factory, "built-demo", build)


def demo_first_run(shared_demo_build: Path) -> str:
    """What the first run of :func:`shared_demo_build` (``snakemake data/packed/demo.pbin``) wrote to stderr."""
    return shared_demo_build.with_name(f"{shared_demo_build.name}.first-run.stderr").read_text()


@pytest.fixture
def built_demo(shared_demo_build: Path, tmp_path: Path) -> Path:
    """A scratch copy of :func:`shared_demo_build`, up to date for Snakemake."""
    return copy_built(shared_demo_build, tmp_path / "built-demo")


def planned_jobs(workflow_dir: Path, *args) -> set[str]:
    """Rule names in the job table of a dry run (with Snakemake's ``args``)."""
    return jobs_of(run_snakemake(workflow_dir, "-n", *args))


def jobs_of(result: subprocess.CompletedProcess) -> set[str]:
    """Rule names in the job table that a Snakemake run printed before its first job: what a dry run of the same
    arguments plans (:func:`planned_jobs`), without a second Snakemake process for it (~2 s)."""
    table = (result.stdout + result.stderr).split("Job stats:")[-1].split("\n\n")[0]
    return {row.split()[0] for row in table.strip().splitlines()[2:] if row.split()[0] != "total"}


class _SnakemakeForks:
    """This process's tests/snakemake_forks.py, started at its first run and ended with this process (its stdin
    closed), and the folder where its runs write their output."""

    def __init__(self) -> None:
        self._server: subprocess.Popen | None = None
        self._folder: str | None = None
        self._replies = b""  # what the server wrote that no call has read yet
        self._args: list[str] = []  # the last request's, for an error
        self._started: list[str] | None = None  # the arguments of a run started (start) whose end is not read yet
        self._env = dict(os.environ)  # this process's environment before any test's monkeypatch
        atexit.register(self.close)

    def run(self, args: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
        self._request(args, cwd, env, group=False)
        code = int(self.reply(timeout=None))
        return subprocess.CompletedProcess(["snakemake", *args], code, Path(self._folder, "stdout").read_text(),
                                           Path(self._folder, "stderr").read_text())

    def start(self, args: list[str], cwd: Path, env: dict) -> int:
        """Start a run in a process group of its own and return its pid (that group's id) at once; its exit
        code is the server's next line (:meth:`ended`)."""
        self._request(args, cwd, env, group=True)
        self._started = args
        return int(self.reply(timeout=None))

    def ended(self, timeout: float | None) -> int | None:
        """The exit code of the run started last (:meth:`start`), or None while it runs after ``timeout`` s."""
        reply = self.reply(timeout)
        if reply is not None:
            self._started = None
        return None if reply is None else int(reply)

    def _request(self, args: list[str], cwd: Path, env: dict, group: bool) -> None:
        import tempfile

        if self._started is not None:  # the server waits for it before it reads this request
            raise AssertionError(f"snakemake {' '.join(self._started)}, started in the background, has not ended: "
                                 f"kill it or wait for it before the next run")
        if self._server is None or self._server.poll() is not None:
            self._folder = tempfile.mkdtemp(prefix="snakemake-forks-")
            self._server = subprocess.Popen([sys.executable, str(Path(__file__).parent / "snakemake_forks.py")],
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            env={**self._env, "PATH": tool_env()["PATH"]})
            self._replies = b""
        self._args = args
        request = {"args": args, "cwd": str(cwd), "env": env, "stdout": str(Path(self._folder, "stdout")),
                   "stderr": str(Path(self._folder, "stderr")), "group": group}
        self._server.stdin.write(json.dumps(request).encode() + b"\n")
        self._server.stdin.flush()

    def reply(self, timeout: float | None) -> str | None:
        """The server's next line, or None where none came within ``timeout`` seconds (read from its pipe's
        descriptor: a buffered reader could hold the next line where select() no longer sees it)."""
        import select

        while b"\n" not in self._replies:
            if not select.select([self._server.stdout], [], [], timeout)[0]:
                return None
            chunk = os.read(self._server.stdout.fileno(), 4096)
            if not chunk:
                raise AssertionError(f"tests/snakemake_forks.py ended (exit {self._server.wait()}) running "
                                     f"snakemake {' '.join(self._args)}")
            self._replies += chunk
        line, self._replies = self._replies.split(b"\n", 1)
        return line.decode()

    def close(self) -> None:
        if self._server is not None:
            self._server.stdin.close()
            self._server.wait()
            shutil.rmtree(self._folder, ignore_errors=True)
            self._server = None


_SNAKEMAKE_FORKS = _SnakemakeForks()


def run_snakemake(workdir: Path, *args, check: bool = True) -> subprocess.CompletedProcess:
    """Run snakemake in ``workdir``; with ``check``, fail the test on a non-zero exit.

    A fork of a process that has imported Snakemake and its plugins already (tests/snakemake_forks.py): the same
    command in a process of its own, without the ~1.5 CPU-s of imports that each `python -m snakemake` pays
    first. ``TOKENMILL_TEST_SNAKEMAKE=process`` starts each run as ``python -m snakemake`` instead."""
    if os.environ.get("TOKENMILL_TEST_SNAKEMAKE") == "process":
        result = subprocess.run([*SNAKEMAKE, *map(str, args)], cwd=workdir, capture_output=True, text=True,
                                env=tool_env())
    else:
        result = _SNAKEMAKE_FORKS.run([*SNAKEMAKE[3:], *map(str, args)], workdir, tool_env())
    if check and result.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(map(str, args))} failed:\n{result.stdout}\n{result.stderr}")
    return result


class SnakemakeRun:
    """A Snakemake run going on in the background (:func:`start_snakemake`), in a process group of its own that
    :meth:`kill` ends whole: Snakemake and the jobs it started."""

    def __init__(self, workdir: Path, args: list[str]) -> None:
        self._code: int | None = None
        if os.environ.get("TOKENMILL_TEST_SNAKEMAKE") == "process":
            self._process = subprocess.Popen([*SNAKEMAKE, *map(str, args)], cwd=workdir, env=tool_env(),
                                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                             start_new_session=True)
            self.pid = self._process.pid
        else:
            self._process = None
            self.pid = _SNAKEMAKE_FORKS.start([*SNAKEMAKE[3:], *map(str, args)], workdir, tool_env())

    def poll(self, timeout: float = 0) -> int | None:
        """Its exit code, or None while it runs (waiting up to ``timeout`` seconds for its end)."""
        if self._code is None:
            if self._process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._code = self._process.wait(timeout)
            else:
                self._code = _SNAKEMAKE_FORKS.ended(timeout)
        return self._code

    def kill(self) -> int:
        """SIGKILL to its process group, where it still runs; returns its exit code."""
        import signal

        if self.poll() is None:
            os.killpg(self.pid, signal.SIGKILL)
        return self.poll(timeout=None)


def start_snakemake(workdir: Path, *args) -> SnakemakeRun:
    """Start snakemake in ``workdir`` and return at once, its output thrown away: for a test that kills a run as
    it goes. A fork as in :func:`run_snakemake` (``TOKENMILL_TEST_SNAKEMAKE=process``: ``python -m snakemake``);
    this process's next :func:`run_snakemake` must wait until it has ended (:meth:`SnakemakeRun.kill`)."""
    return SnakemakeRun(workdir, list(args))


def train_sentencepiece(path, **options) -> bytes:
    """A small Llama-style BPE model (what tokenmill converts) trained with ``options`` on mixed.jsonl, written to
    ``path`` (~0.05 s)."""
    import io

    import sentencepiece

    texts = [json.loads(line)["text"] for line in (DATA / "mixed.jsonl").read_text(encoding="utf-8").splitlines()]
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(texts), model_writer=model, vocab_size=400, model_type="bpe", hard_vocab_limit=False,
        character_coverage=0.98, normalization_rule_name="identity", remove_extra_whitespaces=False,
        byte_fallback=True, minloglevel=2, **options)
    path.write_bytes(model.getvalue())
    return model.getvalue()


@functools.cache
def chat_cases():
    """tests/tokenization/chat_template_cases.py (tokenizer folders, templates, conversations), loaded by path: it
    lives with the tokenization tests, whose reference ids it made. Once per process, so that the tokenizer.json
    text its folders share is made once."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("chat_template_cases",
                                                  Path(__file__).parent / "tokenization/chat_template_cases.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def plan_folder(tmp_path, monkeypatch) -> Path:
    """A working directory holding GPT-2 and three small inputs, for the plan's tests (tests/plan/): raw/a.jsonl
    (250 bytes), raw/b.jsonl and raw/c.jsonl.gz."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw/a.jsonl").write_bytes(b'{"text": "hello world, this is line one"}\n' * 5)
    (tmp_path / "raw/b.jsonl").write_bytes(b'{"text": "b"}\n')
    (tmp_path / "raw/c.jsonl.gz").write_bytes(b"\x1f\x8b\x08\x00" + bytes(20))
    shutil.copy(GPT2, tmp_path / "gpt2.json")
    return tmp_path


def plan_of(**datasets):
    """The plan (tokenmill.plan.Plan) of GPT-2 over ``datasets`` (name → entry), sampled at 512 tokens, seeds 1, 2."""
    from tokenmill.config import validate_config
    from tokenmill.plan import Plan

    config = {"tokenizers": {"gpt2": {"path": "gpt2.json", "eod": "<|endoftext|>"}},
              "datasets": {name: {"tokenizer": "gpt2", **entry} for name, entry in datasets.items()},
              "sampling": {"seq_lengths": [512], "seeds": [1, 2]}}
    return Plan(validate_config(config, "my.yaml"))
