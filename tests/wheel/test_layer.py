"""The layer that carries a wheel into the release image (#32 item 2): only the wheel's files
whose bytes differ from the base's installed ones, the files the wheel no longer has removed
(with the bytecode of a module it changes or drops), the RECORD rewritten so that pip show and
pip check stay true; a base of another version is refused, naming both."""
from __future__ import annotations

import base64
import csv
import hashlib
import io
import zipfile

import pytest

from patchkit.errors import Conflict
from patchkit.wheel import layer

INFO = "tensorrt_llm-1.3.0rc25.dist-info"


def _wheel(tmp_path, files: dict[str, bytes], version: str = "1.3.0rc25"):
    path = tmp_path / f"tensorrt_llm-{version}-py3-none-linux_x86_64.whl"
    info = f"tensorrt_llm-{version}.dist-info"
    files = {**files, f"{info}/METADATA": f"Metadata-Version: 2.1\nName: tensorrt_llm\nVersion: {version}\n".encode(),
             f"{info}/WHEEL": b"Wheel-Version: 1.0\n", f"{info}/RECORD": b""}
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def _b64(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _installed(files: dict[str, bytes], version: str = "1.3.0rc25") -> layer.Installed:
    files = {**files, f"{INFO}/METADATA": f"Metadata-Version: 2.1\nName: tensorrt_llm\nVersion: {version}\n".encode(),
             f"{INFO}/WHEEL": b"Wheel-Version: 1.0\n", f"{INFO}/INSTALLER": b"pip\n",
             "../../../bin/trtllm-serve": b"#!/usr/bin/python3\n"}
    record = "".join(f"{p},{_b64(d)},{len(d)}\n" for p, d in files.items()) + f"{INFO}/RECORD,,\n"
    hashed = {p: (hashlib.sha256(d).hexdigest(), len(d)) for p, d in files.items()}
    hashed[f"{INFO}/RECORD"] = (hashlib.sha256(record.encode()).hexdigest(), len(record))
    return layer.Installed(version, "/usr/local/lib/python3.12/dist-packages", f"{INFO}/RECORD", record, hashed)


BASE = {"tensorrt_llm/__init__.py": b"x = 1\n", "tensorrt_llm/sched.py": b"old\n", "tensorrt_llm/gone.py": b"bye\n",
        "tensorrt_llm/__pycache__/sched.cpython-312.pyc": b"\0old", "tensorrt_llm/__pycache__/gone.cpython-312.pyc": b"\0bye",
        "tensorrt_llm/__pycache__/__init__.cpython-312.pyc": b"\0x", "tensorrt_llm/libs/libtensorrt_llm.so": b"\x7fELF old"}


def test_the_layer_holds_what_differs_removes_what_is_gone_and_record_stays_true(tmp_path):
    wheel = _wheel(tmp_path, {"tensorrt_llm/__init__.py": b"x = 1\n", "tensorrt_llm/sched.py": b"new\n",
                              "tensorrt_llm/new.py": b"hello\n", "tensorrt_llm/libs/libtensorrt_llm.so": b"\x7fELF new"})
    lay = layer.plan(wheel, _installed(BASE), "release:1.3.0rc25")
    assert sorted(lay.copied) == [f"{INFO}/RECORD", "tensorrt_llm/libs/libtensorrt_llm.so", "tensorrt_llm/new.py",
                                  "tensorrt_llm/sched.py"]
    assert lay.removed == ["tensorrt_llm/__pycache__/gone.cpython-312.pyc", "tensorrt_llm/__pycache__/sched.cpython-312.pyc",
                           "tensorrt_llm/gone.py"]
    assert lay.unchanged == 3 and lay.libraries == ["tensorrt_llm/libs/libtensorrt_llm.so"]  # __init__, METADATA, WHEEL
    rows = {r[0]: r[1:] for r in csv.reader(io.StringIO(lay.copied[f"{INFO}/RECORD"].decode()))}
    assert rows["tensorrt_llm/sched.py"] == [_b64(b"new\n"), "4"] and rows[f"{INFO}/RECORD"] == ["", ""]
    # pip's own files, the console script and the bytecode of an unchanged module stay listed
    assert {f"{INFO}/INSTALLER", "../../../bin/trtllm-serve", "tensorrt_llm/__pycache__/__init__.cpython-312.pyc"} <= set(rows)
    assert not {"tensorrt_llm/gone.py", "tensorrt_llm/__pycache__/sched.cpython-312.pyc"} & set(rows)


def test_a_base_of_another_version_is_refused_naming_both(tmp_path):
    wheel = _wheel(tmp_path, {"tensorrt_llm/__init__.py": b"x = 1\n"}, version="1.3.0rc26")
    with pytest.raises(Conflict, match=r"release:1.3.0rc25 has tensorrt_llm 1.3.0rc25 installed, the wheel "
                                       r"tensorrt_llm-1.3.0rc26-py3-none-linux_x86_64.whl is 1.3.0rc26"):
        layer.plan(wheel, _installed(BASE), "release:1.3.0rc25")
