"""Gymnasium conventions every linbandit id follows: render modes, make_vec's
vector_kwargs and wrappers, strict bool flags, plain-text descriptions."""

from __future__ import annotations

import re
import time
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from hypothesis import given, settings
from hypothesis import strategies as st

import linbandit_gym
from linbandit_gym.envs import (
    BAILinBanditEnv,
    ClassificationBanditEnv,
    HeavyTailLinBanditEnv,
    LinBanditWarning,
    LocallyConvexLinBanditEnv,
    SyntheticLinBanditEnv,
)
from linbandit_gym.registration import ENV_DESCRIPTIONS, ENV_IDS, env_description

_rng = np.random.default_rng(0)
_TOY_DATA = (_rng.standard_normal((60, 5)), np.arange(60) % 3)

# Small, offline arguments for every registered id (the OpenML ids get arrays instead of files).
SMALL_KWARGS: dict[str, dict] = {
    "LinBandit-Synthetic-v0": {"d": 6, "n_arms": 5, "horizon": 8},
    "LinBandit-HeavyTail-v0": {"d": 6, "n_arms": 5, "horizon": 8, "rank": 3},
    "LinBandit-LocallyConvex-v0": {"d": 3, "n_arms": 40, "horizon": 8},
    "LinBandit-BAI-v0": {"instance": "soare", "d": 2, "max_pulls": 8},
    "LinBandit-MNIST-v0": {"horizon": 8},
    "LinBandit-Classification-v0": {"dataset": "digits", "horizon": 8},
    "LinBandit-Digits-v0": {"horizon": 8},
    "LinBandit-CNAE9-v0": {"dataset": _TOY_DATA, "horizon": 8},
    "LinBandit-MFeat-v0": {"dataset": _TOY_DATA, "horizon": 8},
    "LinBandit-Spam-v0": {"dataset": _TOY_DATA, "horizon": 8},
}


def test_every_registered_id_has_small_kwargs():
    assert set(SMALL_KWARGS) == set(ENV_IDS)


# -- render modes ----------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", list(ENV_IDS))
def test_every_id_accepts_render_mode_as_sb3_passes_it(env_id):
    # Stable-Baselines3's make_vec_env calls gym.make(id, render_mode="rgb_array") and falls
    # back on TypeError; no id may need that fall-back.
    for mode in (None, "rgb_array", "human"):
        env = gym.make(env_id, render_mode=mode, **SMALL_KWARGS[env_id])
        assert env.render_mode == mode and env.unwrapped.render_mode == mode
        env.close()
    meta = gym.make(env_id, **SMALL_KWARGS[env_id]).metadata
    assert set(meta["render_modes"]) == {"rgb_array", "human"} and meta["render_fps"] > 0


#: Every env id; the OpenML classification sets (the classification env's drawing on another
#: dataset, as Digits and MNIST are) in the slow suite.
OPENML_IDS = ("LinBandit-CNAE9-v0", "LinBandit-MFeat-v0", "LinBandit-Spam-v0")
RENDER_IDS = [
    pytest.param(env_id, marks=pytest.mark.slow) if env_id in OPENML_IDS else env_id
    for env_id in ENV_IDS
]


@pytest.mark.parametrize("env_id", RENDER_IDS)
def test_check_env_passes_with_the_render_check(env_id):
    # check_env builds the env again in every declared render mode and calls render().
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "error", message=".*render"
        )  # a render warning of the checker fails the test
        warnings.filterwarnings(
            "ignore", message=".*different from the unwrapped version"
        )  # on purpose
        env = gym.make(env_id, **SMALL_KWARGS[env_id])
        if np.isinf(
            env.observation_space.high
        ).any():  # Gaussian arms: unbounded, as the checker notes
            with pytest.warns(UserWarning, match="infinity"):
                check_env(env)
        else:
            check_env(
                env
            )  # through gym.make: every render mode via env.spec.make (raw: in each env's tests)
    env.close()


def test_the_readme_names_every_id_on_which_check_env_warns():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    sentence = next(s for s in re.split(r"(?<=\.)\s", readme) if "check_env" in s and "warns" in s)
    named = set(re.findall(r"`(LinBandit-[\w-]+)`", sentence))
    warned = set()
    for env_id in ENV_IDS:
        env = gym.make(env_id, **SMALL_KWARGS[env_id])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(env.unwrapped, skip_render_check=True)
        env.close()
        if any("infinity" in str(w.message) for w in caught):
            warned.add(env_id)
    assert warned == named, f"check_env warns on {sorted(warned)}; the README names {sorted(named)}"


@pytest.mark.parametrize("env_id", RENDER_IDS)
def test_rgb_array_frame_is_an_image_that_changes_with_play(env_id):
    env = gym.make(env_id, render_mode="rgb_array", **SMALL_KWARGS[env_id])
    obs, info = env.reset(seed=0)
    first = env.render()
    assert (
        first.dtype == np.uint8
        and first.ndim == 3
        and first.shape[2] == 3
        and min(first.shape[:2]) >= 200
    )
    assert len(np.unique(first.reshape(-1, 3), axis=0)) > 20  # a drawing, not a blank canvas
    worst = int(np.argmin(env.unwrapped._means))
    env.step(worst)
    after = env.render()
    assert after.shape == first.shape and np.any(after != first)
    env.close()


def _panel(env):
    fig = env.unwrapped._frame_figure
    return fig.axes[0], fig.axes[1]


@pytest.mark.parametrize(
    "cls, kwargs",
    [
        (BAILinBanditEnv, {"instance": "soare", "d": 2, "omega": 0.3}),
        (BAILinBanditEnv, {"instance": "random", "d": 2, "n_arms": 6}),
        (LocallyConvexLinBanditEnv, {"d": 2, "n_arms": 30}),
        (SyntheticLinBanditEnv, {"d": 2, "n_arms": 7}),
    ],
)
def test_d2_frame_draws_the_arm_set_theta_and_the_chosen_arm(cls, kwargs):
    env = cls(render_mode="rgb_array", **kwargs)
    env.reset(seed=3)
    regrets = []
    for action in (1, 0, 1, 2):
        arms = env._arms.copy()
        _, _, _, _, info = env.step(action)
        regrets.append(info["regret"])
    env.render()
    ax_arms, ax_regret = _panel(env)
    points, best, chosen = (c.get_offsets() for c in ax_arms.collections[:3])
    np.testing.assert_allclose(
        points, arms, rtol=1e-6
    )  # the arm set of the round just played, in the plane
    np.testing.assert_allclose(
        best[0], arms[int(np.argmax(arms.astype(np.float64) @ env.theta_star))], rtol=1e-6
    )
    np.testing.assert_allclose(chosen[0], arms[2], rtol=1e-6)  # the last action
    arrow = [t for t in ax_arms.texts if t.get_text() == "theta*"]
    assert len(arrow) == 1  # theta* is drawn (an arrow with its label) along theta*
    tip = np.asarray(arrow[0].get_position())
    np.testing.assert_allclose(
        tip / np.linalg.norm(tip), env.theta_star / np.linalg.norm(env.theta_star), atol=1e-9
    )
    np.testing.assert_allclose(ax_regret.lines[0].get_ydata(), np.cumsum(regrets))


@given(
    d=st.integers(3, 12), k=st.integers(2, 9), seed=st.integers(0, 2**16), steps=st.integers(1, 6)
)
@settings(max_examples=8, deadline=None)
def test_any_d_frame_projects_the_arms_on_theta_and_tracks_cumulative_regret(d, k, seed, steps):
    env = SyntheticLinBanditEnv(d=d, n_arms=k, horizon=steps, render_mode="rgb_array")
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    regrets = []
    for _ in range(steps):
        arms, action = env._arms.astype(np.float64), int(rng.integers(k))
        _, _, _, _, info = env.step(action)
        regrets.append(info["regret"])
    env.render()
    ax_arms, ax_regret = _panel(env)
    points, _, chosen = (c.get_offsets() for c in ax_arms.collections[:3])
    along = arms @ env.theta_star
    np.testing.assert_allclose(points[:, 0], along, atol=1e-9)
    np.testing.assert_allclose(
        points[:, 1], np.linalg.norm(arms - np.outer(along, env.theta_star), axis=1), atol=1e-9
    )
    np.testing.assert_allclose(chosen[0], points[action])
    np.testing.assert_allclose(ax_regret.lines[0].get_ydata(), np.cumsum(regrets))
    assert f"{np.sum(regrets):.4g}" in ax_regret.get_title()


def _title(fig) -> str:
    return fig._suptitle.get_text()  # Figure.get_suptitle() needs matplotlib >= 3.8


@pytest.mark.parametrize(
    "env_id",
    ["LinBandit-Digits-v0", "LinBandit-MNIST-v0", "LinBandit-Synthetic-v0", "LinBandit-BAI-v0"],
)
def test_the_frame_is_titled_with_the_env_id_and_its_legend_is_legible(env_id):
    env = gym.make(env_id, render_mode="rgb_array", **SMALL_KWARGS[env_id])
    env.reset(seed=0)
    env.step(1)
    env.render()
    fig = env.unwrapped._frame_figure
    assert _title(fig) == f"{env_id}: round 1 of {env.unwrapped.horizon}"
    assert "BanditEnv" not in _title(fig)  # not the class name
    ax_arms, ax_regret = fig.axes[:2]
    legend = ax_arms.get_legend()
    what = "pulled" if env_id == "LinBandit-BAI-v0" else "chosen"
    assert [t.get_text() for t in legend.get_texts()] == ["best arm", f"{what} arm 1"]
    sizes = {t.get_fontsize() for t in legend.get_texts()}
    assert min(sizes) >= 9  # points; it was 7
    assert (
        sizes == {ax_arms.title.get_fontsize()} == {ax_regret.title.get_fontsize()}
    )  # as the panel titles
    assert fig._suptitle.get_fontsize() > min(sizes)
    env.close()


def test_the_frame_of_an_env_built_without_gym_make_names_its_class_and_data():
    env = ClassificationBanditEnv(
        dataset="digits", target_class=3, horizon=4, render_mode="rgb_array"
    )
    env.reset(seed=0)
    env.render()
    assert (
        _title(env._frame_figure)
        == "ClassificationBanditEnv(dataset='digits', target_class=3): round 0 of 4"
    )
    env = SyntheticLinBanditEnv(d=3, n_arms=4, horizon=4, render_mode="rgb_array")
    env.render()  # before reset: a placeholder, titled all the same
    assert _title(env._frame_figure) == "SyntheticLinBanditEnv: round 0 of 4"


def test_vector_env_members_and_the_human_window_are_titled_with_the_id():
    import matplotlib.pyplot as plt

    envs = gym.make_vec(
        "LinBandit-Synthetic-v0", num_envs=2, render_mode="rgb_array", d=3, n_arms=4, horizon=4
    )
    envs.reset(seed=0)
    envs.step(np.array([0, 1]))
    envs.render()
    assert [_title(member._frame_figure) for member in envs.envs] == [
        "LinBandit-Synthetic-v0: round 1 of 4"
    ] * 2
    envs.close()
    env = gym.make("LinBandit-LocallyConvex-v0", render_mode="human", d=2, n_arms=20, horizon=5)
    env.reset(seed=0)
    env.step(0)
    window = env.unwrapped._window
    assert _title(window) == "LinBandit-LocallyConvex-v0: round 1 of 5"
    assert min(t.get_fontsize() for t in window.axes[0].get_legend().get_texts()) >= 9
    env.close()
    assert not plt.fignum_exists(window.number)


def test_render_before_reset_and_with_render_mode_none():
    env = SyntheticLinBanditEnv(d=3, n_arms=4, render_mode="rgb_array")
    assert env.render().shape[2] == 3  # before reset: a placeholder, not an exception
    plain = SyntheticLinBanditEnv(d=3, n_arms=4)
    plain.reset(seed=0)
    with pytest.warns(LinBanditWarning, match="render_mode=None") as caught:
        assert plain.render() is None
    assert caught[0].filename == __file__  # the user's line, not the library's
    plain.step(0)
    assert plain._regret_curve == [] and plain._played is None  # nothing is kept without rendering


def test_human_mode_draws_a_window_without_blocking():
    import matplotlib.pyplot as plt

    env = gym.make("LinBandit-LocallyConvex-v0", render_mode="human", d=2, n_arms=20, horizon=5)
    start = time.monotonic()
    env.reset(seed=0)
    for _ in range(5):
        assert env.step(0)[3] in (True, False)
    assert env.render() is None
    assert time.monotonic() - start < 10.0
    window = env.unwrapped._window
    assert window is not None and plt.fignum_exists(window.number)
    assert len(window.axes[0].collections) >= 3  # arms, best arm, chosen arm drawn
    env.close()
    assert not plt.fignum_exists(window.number)


@pytest.mark.parametrize("mode", ["rgb", "RGB_ARRAY", 1, "ansi"])
def test_unknown_render_mode_is_refused_by_name(mode):
    for build in (
        lambda: SyntheticLinBanditEnv(render_mode=mode),
        lambda: ClassificationBanditEnv(dataset=_TOY_DATA, render_mode=mode),
    ):
        with pytest.raises(ValueError, match="render_mode must be None or one of"):
            build()


# the default suite draws without autoreset, the slow suite in each autoreset mode too
@pytest.mark.parametrize(
    "mode",
    [
        m if m is AutoresetMode.DISABLED else pytest.param(m, marks=pytest.mark.slow)
        for m in AutoresetMode
    ],
)
def test_native_vector_env_renders_the_frames_of_sync_vector_env(mode):
    kw = {"d": 2, "n_arms": 5, "horizon": 3, "autoreset_mode": mode}
    native = gym.make_vec("LinBandit-Synthetic-v0", num_envs=2, render_mode="rgb_array", **kw)
    sync = gym.make_vec(
        "LinBandit-Synthetic-v0",
        num_envs=2,
        vectorization_mode="sync",
        render_mode="rgb_array",
        vector_kwargs={"autoreset_mode": kw.pop("autoreset_mode")},
        **kw,
    )
    assert native.render_mode == "rgb_array" and "rgb_array" in native.metadata["render_modes"]
    for venv in (native, sync):
        venv.reset(seed=4)
    steps = 3 if mode == AutoresetMode.DISABLED else 5  # past the horizon: autoreset frames too
    for t in range(steps):
        actions = np.array([t % 5, (2 * t + 1) % 5])
        native.step(actions)
        sync.step(actions)
        frames = native.render()
        assert len(frames) == 2 and all(f.dtype == np.uint8 and f.shape[2] == 3 for f in frames)
        for mine, theirs in zip(frames, sync.render()):
            np.testing.assert_array_equal(mine, theirs)  # the same picture, pixel for pixel
    assert gym.make_vec("LinBandit-Synthetic-v0", num_envs=2, d=2, n_arms=5).render() is None
    with pytest.raises(ValueError, match="render_mode must be None or one of"):
        gym.make_vec("LinBandit-Synthetic-v0", num_envs=2, render_mode="video")


# -- make_vec with vector_kwargs and wrappers --------------------------------------------------
VEC_KW = {"d": 4, "n_arms": 3, "horizon": 3}


def _play(venv, steps=7):
    obs, _ = venv.reset(seed=5)
    out = [obs.copy()]
    for t in range(steps):
        obs, reward, terminated, truncated, _ = venv.step(np.full(venv.num_envs, t % 3))
        out += [obs.copy(), reward.copy(), truncated.copy()]
    return out


def test_gymnasium_make_vec_refuses_vector_kwargs_for_native_ids():
    # Documented in the README: this is Gymnasium's check, before any of our code runs.
    with pytest.raises(gym.error.Error, match="vector_kwargs"):
        gym.make_vec(
            "LinBandit-Synthetic-v0", num_envs=2, vector_kwargs={"autoreset_mode": "SameStep"}
        )


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_make_vec_passes_autoreset_mode_to_the_native_vector_env(mode):
    native = linbandit_gym.make_vec(
        "LinBandit-Synthetic-v0", num_envs=2, vector_kwargs={"autoreset_mode": mode.value}, **VEC_KW
    )
    assert (
        isinstance(native, linbandit_gym.vector.LinBanditVectorEnv)
        and native.autoreset_mode == mode
    )
    sync = gym.make_vec(
        "LinBandit-Synthetic-v0",
        num_envs=2,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": mode},
        **VEC_KW,
    )
    steps = (
        3 if mode == AutoresetMode.DISABLED else 7
    )  # DISABLED must be reset by hand after the horizon
    for a, b in zip(_play(native, steps), _play(sync, steps)):
        np.testing.assert_array_equal(a, b)
    # the documented keyword spelling of gym.make_vec gives the same env
    assert (
        gym.make_vec(
            "LinBandit-Synthetic-v0", num_envs=2, autoreset_mode=mode, **VEC_KW
        ).autoreset_mode
        == mode
    )


def test_make_vec_with_wrappers_builds_sync_over_wrapped_envs():
    from gymnasium.wrappers import TransformReward

    def negate(env):
        return TransformReward(env, lambda r: -r)

    wrapped = linbandit_gym.make_vec(
        "LinBandit-Synthetic-v0", num_envs=2, wrappers=[negate], **VEC_KW
    )
    assert isinstance(wrapped, SyncVectorEnv)
    native = linbandit_gym.make_vec("LinBandit-Synthetic-v0", num_envs=2, **VEC_KW)
    for i, (a, b) in enumerate(zip(_play(wrapped), _play(native))):
        np.testing.assert_array_equal(
            a, -b if i % 3 == 2 else b
        )  # rewards negated, the rest identical
    also = linbandit_gym.make_vec(
        "LinBandit-Synthetic-v0", num_envs=2, vector_kwargs={"copy": False}, **VEC_KW
    )
    assert isinstance(also, SyncVectorEnv)
    with pytest.raises(ValueError, match="wrappers wrap single envs"):
        linbandit_gym.make_vec(
            "LinBandit-Synthetic-v0",
            num_envs=2,
            vectorization_mode="vector_entry_point",
            wrappers=[negate],
            **VEC_KW,
        )
    with pytest.raises(ValueError, match=r"vector_kwargs \['copy'\]"):
        linbandit_gym.make_vec(
            "LinBandit-Synthetic-v0",
            num_envs=2,
            vectorization_mode="vector_entry_point",
            vector_kwargs={"copy": False},
            **VEC_KW,
        )
    with pytest.raises(ValueError, match="given twice"):
        linbandit_gym.make_vec(
            "LinBandit-Synthetic-v0",
            num_envs=2,
            vector_kwargs={"autoreset_mode": "SameStep"},
            autoreset_mode="SameStep",
            **VEC_KW,
        )
    # an id without a native vector env goes to Gymnasium unchanged
    bai = linbandit_gym.make_vec("LinBandit-BAI-v0", num_envs=2, wrappers=[negate], max_pulls=4)
    assert isinstance(bai, SyncVectorEnv)


# -- strict bool flags -----------------------------------------------------------------------------
BOOL_FLAGS = [
    (SyntheticLinBanditEnv, {"d": 3, "n_arms": 4}, "fixed_arms"),
    (SyntheticLinBanditEnv, {"d": 3, "n_arms": 4}, "normalize_arms"),
    (HeavyTailLinBanditEnv, {"d": 3, "n_arms": 4}, "rotate"),
    (HeavyTailLinBanditEnv, {"d": 3, "n_arms": 4}, "normalize"),
    (ClassificationBanditEnv, {"dataset": _TOY_DATA}, "normalize"),
    (ClassificationBanditEnv, {"dataset": _TOY_DATA}, "shuffle_arms"),
]


@pytest.mark.parametrize("cls, kwargs, flag", BOOL_FLAGS)
@pytest.mark.parametrize("value", ["false", "no", "True", "", 0, 1, None, 0.0, [False]])
def test_bool_flags_refuse_non_bools_by_name(cls, kwargs, flag, value):
    # bool("false") and bool("no") are True: a quoted value from YAML or --env-arg must not
    # silently switch the flag on.
    with pytest.raises(
        ValueError, match=f"{flag} must be True or False, got {re.escape(repr(value))}"
    ):
        cls(**kwargs, **{flag: value})


@pytest.mark.parametrize("cls, kwargs, flag", BOOL_FLAGS)
def test_bool_flags_accept_python_and_numpy_bools(cls, kwargs, flag):
    for value in (True, False, np.bool_(True), np.bool_(False)):
        env = cls(**kwargs, **{flag: value})
        assert getattr(env, flag) is bool(value)


def test_string_false_no_longer_fixes_the_arms_through_gym_make():
    with pytest.raises(ValueError, match="fixed_arms must be True or False, got 'false'.*unquoted"):
        gym.make("LinBandit-Synthetic-v0", fixed_arms="false")
    env = gym.make("LinBandit-Synthetic-v0", d=3, n_arms=4, fixed_arms=False)
    first, _ = env.reset(seed=0)
    second = env.step(0)[0]
    assert not np.array_equal(first, second)  # fresh arms every round


# -- descriptions for listings ---------------------------------------------------------------------
def test_every_id_has_its_own_plain_text_description():
    assert set(ENV_DESCRIPTIONS) == set(ENV_IDS)
    assert len(set(ENV_DESCRIPTIONS.values())) == len(ENV_IDS)  # MNIST and Classification differ
    for env_id in ENV_IDS:
        text = env_description(env_id)
        assert text and "\n" not in text and "``" not in text and ":class:" not in text
    assert "MNIST" in env_description("LinBandit-MNIST-v0")
    with pytest.raises(ValueError, match="unknown linbandit env id"):
        env_description("CartPole-v1")


# -- checking env arguments up front (for --env-arg and sweep --dry-run) ---------------------------
_ARRAY = np.zeros((40, 3))


@pytest.mark.parametrize(
    "build, message",
    [
        (
            lambda: SyntheticLinBanditEnv(d=_ARRAY),
            "d must be an int >= 1, got an array of shape (40, 3) (float64)",
        ),
        (
            lambda: SyntheticLinBanditEnv(fixed_arms=(_ARRAY, _ARRAY)),
            "fixed_arms must be True or False, got (array(",
        ),
        (
            lambda: SyntheticLinBanditEnv(noise_std=10**400),
            "noise_std must be a finite number >= 0, got 1000000",
        ),
        (
            lambda: HeavyTailLinBanditEnv(alpha=10**400),
            "alpha (power-law decay of the spectrum) must be a finite",
        ),
        (
            lambda: LocallyConvexLinBanditEnv(d=3, axes=_ARRAY),
            "axes must be a sequence of d=3 finite positive numbers",
        ),
        (
            lambda: LocallyConvexLinBanditEnv(shape=_ARRAY),
            "shape must be one of ('sphere', 'ellipsoid'), got an array",
        ),
        (
            lambda: BAILinBanditEnv(instance=_ARRAY),
            "instance must be one of ('soare', 'random'), got an array",
        ),
        (
            lambda: ClassificationBanditEnv(dataset=_TOY_DATA, target_class=_TOY_DATA),
            "target_class must be an int class label, got (array(",
        ),
    ],
)
def test_bad_arguments_get_a_one_line_message_whatever_their_value(build, message):
    with pytest.raises(ValueError) as info:
        build()
    text = str(info.value)
    assert text.startswith(message) and "\n" not in text and len(text) < 300


def test_check_env_args_accepts_good_arguments_without_loading_data(tmp_path, monkeypatch):
    import linbandit_gym.envs.classification as module

    def no_load(*args, **kwargs):
        raise AssertionError("check_env_args loaded a dataset")

    monkeypatch.setattr(module, "load_dataset", no_load)
    for env_id in ENV_IDS:
        kwargs = {
            k: v for k, v in SMALL_KWARGS[env_id].items() if k != "dataset" or isinstance(v, str)
        }
        linbandit_gym.check_env_args(env_id, kwargs)
    linbandit_gym.check_env_args(
        "LinBandit-CNAE9-v0", {"data_dir": str(tmp_path), "target_class": 3}
    )
    with pytest.raises(ValueError, match="unknown env id 'LinBandit-Nope-v0'"):
        linbandit_gym.check_env_args("LinBandit-Nope-v0", {})


def test_doctests_of_the_env_and_data_modules():
    import doctest
    import importlib

    for name in (
        "linbandit_gym.envs.base",
        "linbandit_gym.envs.classification",
        "linbandit_gym.envs.heavy_tail",
        "linbandit_gym.envs.bai",
        "linbandit_gym.envs.locally_convex",
        "linbandit_gym.registration",
        "linbandit_gym.vector",
        "linbandit_gym.envs.memory",
        "linbandit_gym.envs.names",
        "envs_data._common",
        "envs_data.openml",
        "envs_data.datasets",
    ):
        result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, name
