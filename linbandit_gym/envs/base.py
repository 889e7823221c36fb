"""The linear-bandit environment base class: the env contract (``docs/contracts.md``), once.

Subclasses say only how a problem instance is drawn (:meth:`LinBanditEnv._sample_problem`),
how each round's arm set is drawn (:meth:`LinBanditEnv._sample_arms`) and, when it is not
linear-Gaussian, what the expected and realised rewards are. Everything else -- spaces,
validation, horizon/truncation, ``info`` keys, seeding, rendering, the memory estimate --
lives here.
"""

from __future__ import annotations

import inspect
import math
import numbers
from dataclasses import replace
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from .memory import Allocation, MemoryEstimate, check_fits
from .user_warnings import warn_user

__all__ = [
    "LinBanditEnv",
    "RENDER_MODES",
    "check_bool",
    "check_nonnegative_float",
    "check_positive_int",
    "is_int",
    "check_render_mode",
    "is_finite_real",
    "short_repr",
]

#: The render modes of every env (Gymnasium's names): no rendering, an RGB frame, a matplotlib
#: window.
RENDER_MODES = ("rgb_array", "human")


def short_repr(value: Any, limit: int = 80) -> str:
    """``repr(value)`` on one line and at most ``limit`` characters, for error messages (an
    array becomes its shape and dtype, a long repr is cut with ``...``).

    >>> short_repr(np.zeros((3, 4))), short_repr("x" * 100)[-5:]
    ('an array of shape (3, 4) (float64)', 'xx...')
    """
    if isinstance(value, np.ndarray) and value.ndim > 0:
        return f"an array of shape {value.shape} ({value.dtype})"
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def is_finite_real(value: numbers.Real) -> bool:
    """``math.isfinite`` that says False, not OverflowError, for an int beyond the float range."""
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond the float range
        return False


def is_int(value: Any) -> bool:
    """Whether ``value`` is an int (Python's or numpy's), which a bool is not (``True`` is an
    ``int`` subclass: ``d=True`` would be 1)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def check_positive_int(name: str, value: Any, minimum: int = 1, hint: str = "") -> int:
    """``value`` as an int >= ``minimum``, or a ``ValueError`` naming the argument (and what it
    means, ``hint``)."""
    if not is_int(value) or value < minimum:
        meaning = f" ({hint})" if hint else ""
        raise ValueError(f"{name} must be an int >= {minimum}{meaning}, got {short_repr(value)}")
    return int(value)


def check_bool(name: str, value: Any) -> bool:
    """``value`` as a bool, or a ``ValueError`` naming the argument.

    Only ``True``/``False`` (Python or numpy bools) pass. Strings are refused rather than
    parsed: ``bool("false")`` is True, so a quoted ``"false"`` from a config file or
    ``--env-arg flag=false`` would silently turn the flag on.

    >>> check_bool("fixed_arms", False)
    False
    """
    if not isinstance(value, (bool, np.bool_)):
        hint = (
            f"; write it unquoted (YAML: {name}: false, command line: --env-arg {name}=False)"
            if isinstance(value, str)
            else ""
        )
        raise ValueError(
            f"{name} must be True or False, got {short_repr(value)} ({type(value).__name__}){hint}"
        )
    return bool(value)


def check_render_mode(render_mode: Any) -> str | None:
    """``render_mode`` if it is None or one of :data:`RENDER_MODES`, else a ``ValueError``."""
    if render_mode is not None and (
        not isinstance(render_mode, str) or render_mode not in RENDER_MODES
    ):
        raise ValueError(
            f"render_mode must be None or one of {list(RENDER_MODES)}, got "
            f"{short_repr(render_mode)}"
        )
    return render_mode


def constructor_arguments(cls: type, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` completed with the defaults of ``cls``'s constructor, or the constructor's
    ``TypeError`` for an unknown name.

    A constructor taking ``**kwargs`` forwards them to its base class (the convention of the
    env families, e.g. ``DigitsBanditEnv(dataset="digits", **kwargs)``), so the base's
    parameters and defaults join in, the subclass's defaults first.
    """
    arguments: dict[str, Any] = {}
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        parameters = list(inspect.signature(init).parameters.values())[1:]  # after self
        for p in parameters:
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.default is not p.empty:
                arguments.setdefault(p.name, p.default)
        if not any(p.kind is p.VAR_KEYWORD for p in parameters):
            unknown = [name for name in kwargs if name not in arguments]
            if unknown:
                raise TypeError(
                    f"{cls.__name__}.__init__() got an unexpected keyword argument {unknown[0]!r}"
                )
            break
    return {**arguments, **kwargs}


def check_nonnegative_float(name: str, value: Any) -> float:
    """``value`` as a finite float >= 0, or a ``ValueError`` naming the argument."""
    if (
        isinstance(value, (bool, np.bool_))
        or not isinstance(value, numbers.Real)
        or not is_finite_real(value)
        or value < 0
    ):
        raise ValueError(f"{name} must be a finite number >= 0, got {short_repr(value)}")
    return float(value)


class LinBanditEnv(gym.Env):
    """Base class of every linbandit environment (a stochastic linear bandit).

    Each round the agent observes an arm set ``obs`` of shape ``(K, d)`` (float32), picks
    ``action`` in ``Discrete(K)`` and receives ``reward = <x_action, theta*> + noise``
    (subclasses may define other reward models). After ``horizon`` rounds the episode is
    truncated. ``reset(seed=s)`` fixes theta*, the arm stream and the noise.

    ``info`` of every step holds ``expected_reward`` (of the chosen arm),
    ``best_expected_reward``, ``regret`` (instantaneous pseudo-regret, >= 0) and
    ``best_arm``; the reset ``info`` holds ``best_arm`` and ``best_expected_reward`` of the
    first arm set.

    The expected rewards are computed from the float32 arms the agent sees (cast to
    float64), so regret is exact for what was observed.

    Rendering (``render_mode=``, Gymnasium's convention): ``None`` (default) draws nothing;
    ``"rgb_array"``: :meth:`render` returns an ``(H, W, 3)`` uint8 frame; ``"human"``: the
    same picture in a matplotlib window, redrawn on every reset and step (nothing is shown,
    and nothing blocks, under a non-interactive backend such as Agg, which matplotlib picks
    when there is no display). The frame has two panels, drawn here for every family:

    * the arm set on which the last action was taken (after a reset: the first arm set),
      coloured by expected reward, with the best arm (star) and the chosen arm (red ring).
      For ``d = 2`` the arms are drawn in the plane with theta* as an arrow; for larger
      ``d`` each arm is projected on theta* (x: ``<x, theta*/||theta*||>``, y: distance from
      the theta* axis); without a theta* (classification) on the arm set's two principal
      directions;
    * the cumulative (pseudo-)regret so far against the round.

    Memory: :meth:`memory_estimate` gives the peak bytes an env of given arguments takes
    (build, reset and steps) without building it; every constructor compares it with the
    memory available before allocating anything and raises
    :class:`~linbandit_gym.envs.memory.EnvTooLargeError` (a ``ValueError`` naming the
    arguments, the bytes and the fix) for sizes that cannot fit.

    Subclasses implement :meth:`_sample_problem` and :meth:`_sample_arms` and may
    override :meth:`_expected_rewards` and :meth:`_sample_reward`; a subclass that allocates
    more than the arm sets extends :meth:`_memory_estimate` and calls
    :meth:`_refuse_if_too_large` with it before allocating (else the base class checks its
    own part).

    ## Arguments
    Keyword-only; each family passes its own (its table lists what users give it).

    | argument | default | meaning |
    |---|---|---|
    | ``d`` | required | dimension of the arms |
    | ``n_arms`` | required | arms per round K, >= 2 |
    | ``horizon`` | 2000 | rounds per episode |
    | ``noise_std`` | 0.1 | std of the Gaussian reward noise, >= 0 |
    | ``arm_bound`` | inf | bound on each arm coordinate: the observation space's ``high`` |
    | ``render_mode`` | None | None, ``"rgb_array"`` or ``"human"`` (see Rendering above) |
    """

    metadata = {"render_modes": list(RENDER_MODES), "render_fps": 30}
    #: Bytes per number of the ``(n_arms, d)``-sized arrays, measured at the peak of build,
    #: reset and steps: held, the observation space's float32 bounds and their bool masks (10)
    #: plus a spare comparison mask (1) and the float32 arm set (4); while a round is drawn,
    #: the draw in float64 (8), its float32 copy (4) and the float64 cast for the means (8).
    _HELD_ARM_BYTES = 15
    _ROUND_ARM_BYTES = 20
    _memory_checked = False
    #: size of a rendered frame: (width, height) in inches at ``_RENDER_DPI`` dots per inch
    _RENDER_SIZE = (9.0, 3.6)
    _RENDER_DPI = 80
    #: font sizes (points) of the frame's title and of its panels' titles and legend
    _TITLE_FONT = 11
    _PANEL_FONT = 9
    #: the name a vector env gives its members' frames (their own spec is None)
    _frame_name: str | None = None

    def __init__(
        self,
        *,
        d: int,
        n_arms: int,
        horizon: int = 2000,
        noise_std: float = 0.1,
        arm_bound: float = np.inf,
        render_mode: str | None = None,
    ):
        super().__init__()
        self.render_mode = check_render_mode(render_mode)
        self.d = check_positive_int("d", d)
        self.n_arms = check_positive_int("n_arms", n_arms, minimum=2)
        self.horizon = check_positive_int("horizon", horizon)
        self.noise_std = check_nonnegative_float("noise_std", noise_std)
        if (
            not self._memory_checked
        ):  # a family checks its whole estimate first; else the base part here
            self._refuse_if_too_large(
                LinBanditEnv._memory_estimate(
                    d=d, n_arms=n_arms, horizon=horizon, render_mode=render_mode
                )
            )
        # arm_bound: a known bound on every coordinate (1.0 for unit-norm arms), else unbounded
        self.observation_space = spaces.Box(
            low=-arm_bound, high=arm_bound, shape=(self.n_arms, self.d), dtype=np.float32
        )
        self.action_space = spaces.Discrete(self.n_arms)
        self.theta_star: np.ndarray | None = None
        self._arms: np.ndarray | None = None
        self._means: np.ndarray | None = None
        self.t = 0
        self._done = True
        # What render() draws: the cumulative regret after each step, and the last played
        # round (arms, their means, the chosen arm, what the choice was). Kept only when
        # render_mode is set, so that stepping without rendering costs nothing extra.
        self._regret_curve: list[float] = []
        self._played: tuple[np.ndarray, np.ndarray, int, str] | None = None
        self._frame_figure = None  # the reused Agg figure of "rgb_array"
        self._window = None  # the pyplot figure of "human"

    @classmethod
    def check_arguments(cls, **kwargs: Any) -> None:
        """Raise the error the constructor raises for ``kwargs`` (a ``ValueError`` naming the
        argument, or a ``TypeError`` for an unknown name), keeping no env.

        The default builds one env and closes it; families whose construction is costly
        (datasets) override it to check without the cost.
        """
        cls(**kwargs).close()

    # -- memory ------------------------------------------------------------------------
    @classmethod
    def memory_estimate(cls, **kwargs: Any) -> MemoryEstimate:
        """The peak memory of an env built with ``kwargs`` (the constructor's keywords; defaults
        filled in), reset and stepped, without building it.

        Raises the constructor's ``ValueError`` for a bad size argument and its ``TypeError``
        for an unknown name. ``.nbytes`` is the total in bytes.

        >>> from linbandit_gym.envs import SyntheticLinBanditEnv
        >>> SyntheticLinBanditEnv.memory_estimate(d=1000, n_arms=100).nbytes
        3516000
        """
        return cls._memory_estimate(**constructor_arguments(cls, kwargs))

    @classmethod
    def _memory_estimate(
        cls, *, d: Any, n_arms: Any, horizon: Any = 2000, render_mode: Any = None, **_: Any
    ) -> MemoryEstimate:
        """The base part of every family: arm sets, length-d vectors, the rendered regret curve."""
        d = check_positive_int("d", d)
        n_arms = check_positive_int("n_arms", n_arms, minimum=2)
        horizon = check_positive_int("horizon", horizon)
        arms, fix = ("n_arms", "d"), "lower d or n_arms"
        allocations = [
            Allocation(
                "the observation space's bounds and the arm set",
                n_arms * d,
                cls._HELD_ARM_BYTES,
                arms,
                fix,
            ),
            Allocation(
                "a round's draw and its copies",
                n_arms * d,
                cls._ROUND_ARM_BYTES,
                arms,
                fix,
                transient=True,
            ),
            Allocation("theta* and other vectors of length d", d, 16, ("d",), "lower d"),
        ]
        arguments = {"d": d, "n_arms": n_arms}
        if check_render_mode(render_mode) is not None:
            # a Python float and its list slot per round (see _after_step)
            allocations.append(
                Allocation(
                    "the cumulative-regret curve kept for render()",
                    horizon,
                    32,
                    ("horizon",),
                    "lower horizon, or render_mode=None",
                )
            )
            arguments.update(horizon=horizon, render_mode=render_mode)
        return MemoryEstimate(
            cls.__name__, arguments, tuple(allocations), obs_shape=(n_arms, d), rounds=horizon
        )

    def _refuse_if_too_large(self, estimate: MemoryEstimate) -> None:
        """Raise :class:`~linbandit_gym.envs.memory.EnvTooLargeError` if ``estimate`` cannot fit
        in memory (before anything is allocated)."""
        check_fits(replace(estimate, owner=type(self).__name__))
        self._memory_checked = True

    # -- what subclasses supply ----------------------------------------------------
    def _sample_problem(self, rng: np.random.Generator) -> None:
        """Draw the instance (theta*, fixed data) for a new episode; sets ``self.theta_star``."""
        raise NotImplementedError

    def _sample_arms(self, rng: np.random.Generator) -> np.ndarray:
        """Draw the arm set of the next round, shape ``(K, d)``."""
        raise NotImplementedError

    def _expected_rewards(self, arms: np.ndarray) -> np.ndarray:
        """Mean reward of every arm of ``arms``, the float32 arm set ``(K, d)`` the agent sees
        (default: linear, ``arms @ theta*`` with the arms cast to float64, so that the means are
        exact for what was observed). A family whose means do not read the arms (class labels)
        pays no cast."""
        return arms.astype(np.float64) @ self.theta_star

    def _sample_reward(self, mean: float, rng: np.random.Generator) -> float:
        """Realised reward of the chosen arm (default: Gaussian noise of std ``noise_std``)."""
        return float(mean + self.noise_std * rng.standard_normal())

    # -- gymnasium API -------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        # Independent streams for the instance, the arms and the noise, so that the arm
        # stream and theta* never depend on what the agent plays.
        problem_rng, arm_rng, noise_rng = self.np_random.spawn(3)
        self._arm_rng, self._noise_rng = arm_rng, noise_rng
        self._sample_problem(problem_rng)
        self.t = 0
        self._done = False
        self._regret_curve = []
        self._played = None
        self._next_round()
        if self.render_mode == "human":
            self.render()
        return self._arms.copy(), {
            "best_arm": int(np.argmax(self._means)),
            "best_expected_reward": float(np.max(self._means)),
        }

    def _next_round(self) -> None:
        arms = np.asarray(self._sample_arms(self._arm_rng), dtype=np.float32)
        self._arms = arms
        self._means = np.asarray(self._expected_rewards(arms), dtype=np.float64)

    def _validate_action(self, action: Any) -> int:
        if type(action) is int and 0 <= action < self.action_space.n:
            return action  # a Python int in range: what the checks below let through unchanged
        if isinstance(action, np.ndarray) and action.ndim == 0:
            action = action.item()
        if not is_int(action):
            raise ValueError(
                f"action must be an int arm index in [0, {self.action_space.n}), got "
                f"{short_repr(action)} ({type(action).__name__}); pass e.g. int(np.argmax(scores))"
            )
        if not 0 <= int(action) < self.action_space.n:
            raise ValueError(
                f"action {int(action)} is out of range: this env has arms "
                f"0..{self.action_space.n - 1}"
            )
        return int(action)

    def _check_can_step(self) -> None:
        if self._arms is None:
            raise RuntimeError("call reset() before step()")
        if self._done:
            raise RuntimeError(
                f"the episode ended (horizon={self.horizon} rounds reached or the episode "
                "terminated); call reset() "
                "before stepping again"
            )

    def step(self, action: Any):
        self._check_can_step()
        action = self._validate_action(action)  # raises before any state changes
        means = self._means
        best_arm = int(means.argmax())
        expected = float(means[action])
        best = float(means[best_arm])
        reward = self._sample_reward(expected, self._noise_rng)
        info = {
            "expected_reward": expected,
            "best_expected_reward": best,
            "regret": max(best - expected, 0.0),
            "best_arm": best_arm,
        }
        self.t += 1
        played = (
            self._arms,
            self._means,
        )  # the round just played, before the next arm set replaces it
        truncated = self.t >= self.horizon
        if truncated:
            self._done = True
        else:
            self._next_round()
        self._after_step(action, info["regret"], played=played)
        return self._arms.copy(), float(reward), False, truncated, info

    # -- rendering (one implementation for every family) ------------------------------
    def _after_step(
        self,
        arm: int,
        regret: float,
        what: str = "chosen",
        played: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        """Keep what :meth:`render` draws of the round just played -- its arm set and means
        (``played``, default the current ones), the ``arm`` taken and its ``regret`` -- and
        redraw the window in ``"human"`` mode. Nothing is kept when ``render_mode`` is None."""
        if self.render_mode is None:
            return
        arms, means = played if played is not None else (self._arms, self._means)
        total = (self._regret_curve[-1] if self._regret_curve else 0.0) + float(regret)
        self._regret_curve.append(total)
        # references, not copies: arm sets are replaced every round, never written in place
        self._played = (arms, means, int(arm), what)
        if self.render_mode == "human":
            self.render()

    def render(self):
        """The current frame: an ``(H, W, 3)`` uint8 array (``"rgb_array"``), or drawn in a
        window (``"human"``, returns None). See the class docstring for what it shows."""
        if self.render_mode is None:
            warn_user(
                "render() was called with render_mode=None: nothing to draw. Make the env with "
                "render_mode='rgb_array' (frames) or 'human' (a matplotlib window)."
            )
            return None
        if self.render_mode == "rgb_array":
            from matplotlib.backends.backend_agg import FigureCanvasAgg
            from matplotlib.figure import Figure

            if self._frame_figure is None:
                self._frame_figure = Figure(figsize=self._RENDER_SIZE, dpi=self._RENDER_DPI)
                FigureCanvasAgg(self._frame_figure)
            fig = self._frame_figure
            fig.clear()
            self._draw_frame(fig)
            fig.canvas.draw()
            return np.asarray(fig.canvas.buffer_rgba())[..., :3].copy()
        return self._render_window()

    def _render_window(self) -> None:
        import warnings

        import matplotlib.pyplot as plt

        if self._window is None or not plt.fignum_exists(self._window.number):
            self._window = plt.figure(figsize=self._RENDER_SIZE, dpi=self._RENDER_DPI)
        fig = self._window
        fig.clear()
        self._draw_frame(fig)
        if fig.canvas.required_interactive_framework is None:
            # A non-interactive backend (Agg when there is no display): draw, show nothing,
            # and never wait, so that scripts and tests run through.
            fig.canvas.draw()
            return None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            plt.pause(1.0 / self.metadata["render_fps"])  # shows the window without blocking
        return None

    @property
    def frame_name(self) -> str:
        """What the rendered frame is titled with: the env id when the env was made by
        ``gym.make``/``gym.make_vec`` (its ``spec.id``), else :meth:`_default_frame_name`."""
        if self._frame_name is not None:
            return self._frame_name
        spec = getattr(self, "spec", None)
        return spec.id if spec is not None else self._default_frame_name()

    def _default_frame_name(self) -> str:
        """The frame's title without an env id: the class name (families may add what tells
        their instances apart)."""
        return type(self).__name__

    def _draw_frame(self, fig) -> None:
        """Draw the frame into a matplotlib ``Figure`` (the one drawing routine of every env)."""
        # a fixed layout: tight_layout would measure every label again and double the cost of a
        # frame
        ax_arms, ax_regret = fig.subplots(
            1,
            2,
            gridspec_kw={
                "width_ratios": [1.15, 1.0],
                "left": 0.09,
                "right": 0.985,
                "bottom": 0.15,
                "top": 0.84,
                "wspace": 0.3,
            },
        )
        fig.suptitle(
            f"{self.frame_name}: round {self.t} of {self.horizon}", fontsize=self._TITLE_FONT
        )
        if self._played is not None:
            arms, means, arm, what = self._played
        elif self._arms is not None:
            arms, means, arm, what = self._arms, self._means, None, ""
        else:
            arms = None
        if arms is None:
            ax_arms.text(
                0.5, 0.5, "call reset() to draw the first arm set", ha="center", va="center"
            )
            ax_arms.set_axis_off()
        else:
            self._draw_arm_panel(fig, ax_arms, np.asarray(arms, dtype=np.float64), means, arm, what)
        curve = self._regret_curve
        ax_regret.plot(np.arange(1, len(curve) + 1), curve, color="tab:red", lw=1.5)
        ax_regret.set_xlim(0, max(len(curve), 1))
        ax_regret.set_ylim(bottom=0.0, top=max(curve[-1] if curve else 0.0, 1e-9) * 1.05)
        ax_regret.set_xlabel("round")
        ax_regret.set_ylabel("cumulative regret")
        total = curve[-1] if curve else 0.0
        ax_regret.set_title(f"cumulative regret so far: {total:.4g}", fontsize=self._PANEL_FONT)
        ax_regret.grid(alpha=0.3)

    def _draw_arm_panel(
        self, fig, ax, arms: np.ndarray, means: np.ndarray, arm: int | None, what: str
    ) -> None:
        theta = None if self.theta_star is None else np.asarray(self.theta_star, dtype=np.float64)
        if theta is not None and self.d == 2:
            xy = arms
            reach = float(np.max(np.linalg.norm(arms, axis=1))) or 1.0
            # the arrow reaches past the arms, so that the arm at its tip stays visible
            tip = theta / (np.linalg.norm(theta) or 1.0) * reach * 1.25
            ax.annotate(
                "",
                xy=tip,
                xytext=(0.0, 0.0),
                arrowprops={"arrowstyle": "->", "color": "0.35", "lw": 1.2},
            )
            ax.text(
                *(tip * 1.1),
                "theta*",
                ha="center",
                va="center",
                fontsize=self._PANEL_FONT,
                color="0.25",
            )
            ax.update_datalim(
                np.array([[0.0, 0.0], tip * 1.2])
            )  # annotations do not widen the axes
            ax.set_xlabel("x_1")
            ax.set_ylabel("x_2")
            ax.set_aspect("equal", adjustable="datalim")
            ax.set_title("arm set and theta*", fontsize=self._PANEL_FONT)
        elif theta is not None:
            u = theta / (np.linalg.norm(theta) or 1.0)
            along = arms @ u
            xy = np.column_stack([along, np.linalg.norm(arms - np.outer(along, u), axis=1)])
            ax.set_xlabel("<x, theta*> / ||theta*||")
            ax.set_ylabel("distance from the theta* axis")
            ax.set_title(
                f"{len(arms)} arms projected on theta* (d = {self.d})", fontsize=self._PANEL_FONT
            )
        else:
            # No theta* (e.g. classification): the arm set's two principal directions.
            centred = arms - arms.mean(axis=0)
            _, _, vt = np.linalg.svd(centred, full_matrices=False)
            xy = np.zeros((len(arms), 2))
            xy[:, : min(2, vt.shape[0])] = centred @ vt[:2].T
            ax.set_xlabel("1st principal direction")
            ax.set_ylabel("2nd principal direction")
            ax.set_title(
                f"{len(arms)} arms on their 2 principal directions (no theta*)",
                fontsize=self._PANEL_FONT,
            )
        size = 36 if len(arms) <= 50 else 10
        points = ax.scatter(xy[:, 0], xy[:, 1], c=means, cmap="viridis", s=size, zorder=2)
        fig.colorbar(points, ax=ax, label="expected reward")
        best = int(np.argmax(means))
        ax.scatter(
            *xy[best],
            marker="*",
            s=160,
            facecolor="none",
            edgecolor="black",
            zorder=3,
            label="best arm",
        )
        if arm is not None:
            ax.scatter(
                *xy[arm],
                s=220,
                facecolor="none",
                edgecolor="red",
                lw=2,
                zorder=4,
                label=f"{what} arm {arm}",
            )
        ax.legend(loc="best", fontsize=self._PANEL_FONT, markerscale=0.7)
        ax.grid(alpha=0.3)

    def close(self) -> None:
        if self._window is not None:
            import matplotlib.pyplot as plt

            plt.close(self._window)
            self._window = None
        self._frame_figure = None
