"""Native vector environments: B independent linear bandits advanced as one array program.

``gym.make_vec("LinBandit-Synthetic-v0", num_envs=B)`` (the registered ``vector_entry_point``)
returns a :class:`LinBanditVectorEnv`: one ``reset``/``step`` yields the ``(B, K, d)`` arm sets
of all B sub-envs, each with its own theta*, arm stream and noise. The results are IDENTICAL
(bit for bit) to B separate ``gym.make(id)`` envs reset with the same seeds, and to
Gymnasium's ``SyncVectorEnv`` over them, in every autoreset mode -- the tests check it.

How, and where the Python loop over members remains:

* Each member is a real single env of the family (``env_class``), used as a *sampler*: reset
  goes through its own ``reset`` (so ``np_random.spawn`` hands it the same problem/arm/noise
  generators as a standalone env), and every round its own ``_sample_arms(arm_rng)`` and, for
  the default Gaussian reward, one ``noise_rng.standard_normal()`` draw. B separate bit
  generators cannot be advanced by one numpy call, so these draws are the one unavoidable
  loop over B (it is also where the time goes: K*d normals per member and round).
* Everything else is batched: the expected rewards ``(B, K, d) @ (B, d, 1)`` (numpy's stacked
  matmul, bitwise equal to the members' ``arms @ theta*``), best arm, regret, the realised
  reward ``mean + noise_std * z``, truncation and the info arrays. Families that override
  ``_expected_rewards`` or ``_sample_reward`` fall back to the member's own method (looped).

Torch tensors on a device: ``gym.make_vec(id, num_envs=B, device="cuda")`` returns observations,
rewards, terminations and truncations as torch tensors on that device (the info arrays stay
numpy) and accepts torch actions; the batched agents of :mod:`agents.batched` take either.
(Gymnasium's ``NumpyToTorch`` wrapper does the same but needs the ``array-api-compat`` package.)

Rendering: ``render_mode="rgb_array"`` (or ``"human"``) hands each member the round it just
played, and ``render()`` returns the members' frames as a tuple, the same pictures as
``SyncVectorEnv`` draws (see :class:`~linbandit_gym.envs.base.LinBanditEnv`).

Autoreset mode and wrappers: ``gymnasium.make_vec`` refuses ``vector_kwargs=`` and
``wrappers=`` for any id with a native vector env (ours are the default). Pass the autoreset
mode as a keyword instead (``gym.make_vec(id, num_envs=B, autoreset_mode="SameStep")``), or
call :func:`make_vec` here, which takes Gymnasium's signature and accepts both: it hands
``vector_kwargs={"autoreset_mode": ...}`` to the native vector env, and with ``wrappers`` (or
other ``vector_kwargs``, which are ``SyncVectorEnv`` options) it builds Gymnasium's
``SyncVectorEnv`` over wrapped single envs (the same episodes, member by member).

Example:

>>> import gymnasium as gym, numpy as np
>>> import linbandit_gym
>>> envs = gym.make_vec("LinBandit-Synthetic-v0", num_envs=4, d=8, n_arms=5, horizon=3)
>>> obs, info = envs.reset(seed=0)           # member i is seeded 0 + i
>>> obs.shape
(4, 5, 8)
>>> obs, reward, terminated, truncated, info = envs.step(np.zeros(4, dtype=np.int64))
>>> reward.shape, info["regret"].shape
((4,), (4,))
>>> envs.close()
"""

from __future__ import annotations

import copy
import importlib
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from .envs.base import RENDER_MODES, LinBanditEnv, check_positive_int, check_render_mode, is_int
from .envs.memory import Allocation, MemoryEstimate, check_fits
from .envs.names import did_you_mean

__all__ = [
    "CNAE9VectorEnv",
    "ClassificationVectorEnv",
    "DigitsVectorEnv",
    "HeavyTailVectorEnv",
    "LinBanditVectorEnv",
    "LocallyConvexVectorEnv",
    "MFeatVectorEnv",
    "SpamVectorEnv",
    "SyntheticVectorEnv",
    "make_vec",
    "supports_vector",
    "vector_env_class",
]

#: What ``num_envs`` means, for its messages.
NUM_ENVS = "the number of sub-envs B"
_STEP_KEYS = ("expected_reward", "best_expected_reward", "regret", "best_arm")


def _load(entry_point: str | type) -> type:
    if isinstance(entry_point, type):
        return entry_point
    module_name, _, attr = entry_point.partition(":")
    return getattr(importlib.import_module(module_name), attr)


class LinBanditVectorEnv(VectorEnv):
    """B independent sub-envs of one :class:`~linbandit_gym.envs.base.LinBanditEnv` family, batched.

    ## Observation Space
    ``Box(-inf, inf, (num_envs, n_arms, d), float32)``: the arm sets of all members.

    ## Action Space
    ``MultiDiscrete([n_arms] * num_envs)``: one arm index per member (numpy or torch ints).

    ## Rewards and info
    ``reward``: float64 ``(num_envs,)``. ``info`` is Gymnasium's dict of arrays with ``_key``
    masks: ``expected_reward``, ``best_expected_reward``, ``regret`` (float64) and
    ``best_arm`` (int64) on a step, ``best_arm`` and ``best_expected_reward`` on a reset.

    ## Seeding
    ``reset(seed=s)`` seeds member i with ``s + i`` (Gymnasium's convention); a list gives one
    seed per member. Member i then replays exactly the episode of ``gym.make(id).reset(seed=s+i)``.

    ## Episode End and autoreset
    Every member is truncated after ``horizon`` rounds. ``autoreset_mode`` is Gymnasium's
    (``NEXT_STEP`` default, ``SAME_STEP`` or ``DISABLED``), with the same semantics as
    ``SyncVectorEnv``; an autoreset member is reset with ``seed=None`` (its generator goes on).

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | ``num_envs`` | 1 | B, the number of members |
    | ``autoreset_mode`` | ``NEXT_STEP`` | Gymnasium autoreset mode (enum or its string value) |
    | ``env_class`` | class attribute | the members' single-env class (or ``"module:Class"``) |
    | ``device`` | None | None: numpy outputs; a torch device (``"cpu"``): torch tensors there |
    | ``render_mode`` | None | None, ``"rgb_array"`` (every member's frame) or ``"human"`` |
    | ``**env_kwargs`` | | the family's arguments (``d``, ``n_arms``, ``horizon``, ...) |
    """

    metadata = {
        "render_modes": list(RENDER_MODES),
        "render_fps": 30,
        "autoreset_mode": AutoresetMode.NEXT_STEP,
    }
    env_class: type | str | None = None
    #: members share the first member's read-only data (shallow copies; for dataset envs)
    share_data: bool = False

    def __init__(
        self,
        num_envs: int = 1,
        *,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        env_class: type | str | None = None,
        device: Any = None,
        render_mode: str | None = None,
        **env_kwargs: Any,
    ):
        num_envs = check_positive_int("num_envs", num_envs, hint=NUM_ENVS)
        try:
            mode = (
                autoreset_mode
                if isinstance(autoreset_mode, AutoresetMode)
                else AutoresetMode(autoreset_mode)
            )
        except ValueError as exc:
            raise ValueError(
                f"autoreset_mode must be one of {[m.value for m in AutoresetMode]} (or a "
                "gymnasium.vector.AutoresetMode), "
                f"got {autoreset_mode!r}"
            ) from exc
        self.render_mode = check_render_mode(render_mode)
        if render_mode is not None:
            env_kwargs["render_mode"] = render_mode  # members draw their own frames (see step)
        cls = _load(env_class if env_class is not None else self.env_class)
        if not (isinstance(cls, type) and issubclass(cls, LinBanditEnv)):
            raise TypeError(f"env_class must be a LinBanditEnv subclass, got {cls!r}")
        custom = [
            m
            for m in ("reset", "step", "_next_round")
            if getattr(cls, m) is not getattr(LinBanditEnv, m)
        ]
        if custom:
            raise TypeError(
                f"{cls.__name__} overrides {custom} of LinBanditEnv, which the native vector env "
                "replays in batch; "
                "use gym.make_vec(..., vectorization_mode='sync') for it"
            )
        self.device = None
        if device is not None:
            from agents._torch import resolve_device  # clear error for cuda without CUDA

            self.device = resolve_device(device)
        # Before any member is built: B members, the batch buffers and spaces (EnvTooLargeError)
        check_fits(self.memory_estimate(num_envs, env_class=cls, **env_kwargs))
        self.env_class = cls
        self.env_kwargs = dict(env_kwargs)
        self.num_envs = int(num_envs)
        first = cls(**env_kwargs)
        if self.share_data:
            # Read-only data (e.g. a loaded dataset) is shared: the other members are shallow
            # copies made before any reset, so each gets its own generators at reset.
            self.envs: list[LinBanditEnv] = [first] + [
                copy.copy(first) for _ in range(self.num_envs - 1)
            ]
        else:
            self.envs = [first] + [cls(**env_kwargs) for _ in range(self.num_envs - 1)]
        self.n_arms, self.d, self.horizon = first.n_arms, first.d, first.horizon
        self.autoreset_mode = mode
        self.metadata = {**type(self).metadata, "autoreset_mode": mode}
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        # Which hooks can be batched: the base-class linear mean and Gaussian noise.
        self._linear_means = cls._expected_rewards is LinBanditEnv._expected_rewards
        self._gaussian_noise = cls._sample_reward is LinBanditEnv._sample_reward
        B, K, d = self.num_envs, self.n_arms, self.d
        self._obs = np.zeros((B, K, d), dtype=np.float32)
        self._means = np.zeros((B, K), dtype=np.float64)
        self._theta = np.zeros((B, d, 1), dtype=np.float64)
        self._t = np.zeros(B, dtype=np.int64)
        self._autoreset = np.zeros(B, dtype=np.bool_)
        self._reset_done = False

    #: Bytes per number of the batch's ``(num_envs, n_arms, d)`` arrays at the peak: the batch
    #: observation space's bounds and masks (10), the stacked arm sets (4), the copies handed
    #: to the caller by reset and step (8), and a step's gather and float64 cast of the arms (12).
    _BATCH_ARM_BYTES = 34

    @classmethod
    def memory_estimate(
        cls, num_envs: int = 1, *, env_class: type | str | None = None, **env_kwargs: Any
    ) -> MemoryEstimate:
        """The peak memory of ``cls(num_envs, **env_kwargs)``, reset and stepped, without building
        it: ``num_envs`` members (data they share once) and the batch's own arrays.

        >>> SyntheticVectorEnv.memory_estimate(4, d=1000, n_arms=100).nbytes
        21664000
        """
        num_envs = check_positive_int("num_envs", num_envs, hint=NUM_ENVS)
        member_class = _load(env_class if env_class is not None else cls.env_class)
        env_kwargs.pop("autoreset_mode", None)
        env_kwargs.pop("device", None)
        member = member_class.memory_estimate(**env_kwargs)
        n_arms, d = member.obs_shape
        return member.batched(num_envs, cls.__name__).plus(
            Allocation(
                "the batch's arm sets and spaces",
                num_envs * n_arms * d,
                cls._BATCH_ARM_BYTES,
                ("num_envs", "n_arms", "d"),
                "lower num_envs, d or n_arms",
            )
        )

    # -- members -------------------------------------------------------------------
    def _reset_member(self, i: int, seed: int | None, options: dict | None) -> dict:
        env = self.envs[i]
        obs, info = env.reset(seed=seed, options=options)
        self._obs[i] = obs
        self._means[i] = env._means
        self._theta[i, :, 0] = (
            np.asarray(env.theta_star, dtype=np.float64) if env.theta_star is not None else 0.0
        )
        self._t[i] = 0
        self._autoreset[i] = False
        return info

    def _next_round(self, idx: np.ndarray) -> None:
        """Draw the next arm sets of members ``idx`` (one RNG call each) and their means
        (batched)."""
        for i in idx:
            env = self.envs[i]
            self._obs[i] = env._sample_arms(
                env._arm_rng
            )  # float64 -> float32, as np.asarray(..., float32)
        if self._linear_means:
            self._means[idx] = np.matmul(self._obs[idx].astype(np.float64), self._theta[idx])[
                ..., 0
            ]
        else:
            for i in idx:
                self._means[i] = self.envs[i]._expected_rewards(self._obs[i])

    @staticmethod
    def _info_arrays(infos: dict, key: str, values: np.ndarray, mask: np.ndarray) -> None:
        infos[key] = values
        infos[f"_{key}"] = mask

    # -- gymnasium API -------------------------------------------------------------
    def reset(self, *, seed: int | list[int | None] | None = None, options: dict | None = None):
        """Reset every member (or those in ``options["reset_mask"]``); seeds as
        ``SyncVectorEnv``."""
        super().reset(seed=seed if isinstance(seed, int) else None)
        B = self.num_envs
        if seed is None:
            seeds: list = [None] * B
        elif is_int(seed):
            seeds = [int(seed) + i for i in range(B)]
        else:
            seeds = list(seed)
            if len(seeds) != B:
                raise ValueError(
                    f"seed as a list must have one seed per sub-env (num_envs={B}), got "
                    f"{len(seeds)}"
                )
        options = dict(options) if options else None
        self._name_member_frames()
        mask = np.ones(B, dtype=np.bool_)
        if options is not None and "reset_mask" in options:
            mask = options.pop("reset_mask")
            if not isinstance(mask, np.ndarray) or mask.shape != (B,) or mask.dtype != np.bool_:
                raise ValueError(
                    f"options['reset_mask'] must be a numpy bool array of shape ({B},)"
                )
            if not mask.any():
                raise ValueError("options['reset_mask'] must select at least one sub-env")
            options = options or None
        infos: dict[str, Any] = {}
        best_arm = np.zeros(B, dtype=np.int64)
        best = np.zeros(B, dtype=np.float64)
        for i in np.flatnonzero(mask):
            info = self._reset_member(int(i), seeds[i], options)
            best_arm[i], best[i] = info["best_arm"], info["best_expected_reward"]
        self._info_arrays(infos, "best_arm", best_arm, mask.copy())
        self._info_arrays(infos, "best_expected_reward", best, mask.copy())
        self._reset_done = True
        return self._out(self._obs.copy()), infos

    def _check_actions(self, actions: Any, players: int | None = None) -> np.ndarray:
        if hasattr(actions, "detach"):  # a torch tensor, possibly on an accelerator
            actions = actions.detach().cpu().numpy()
        arr = np.asarray(actions)
        n = self.num_envs if players is None else players
        if arr.shape != (n,):
            raise ValueError(
                f"actions must have shape ({n},) (one arm index per "
                f"{'sub-env' if players is None else 'player'}), "
                f"got shape {arr.shape}"
            )
        if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(
                f"actions must be integer arm indices, got dtype {arr.dtype}; pass e.g. "
                "scores.argmax(-1)"
            )
        if arr.size and (arr.min() < 0 or arr.max() >= self.n_arms):
            bad = int(arr[(arr < 0) | (arr >= self.n_arms)][0])
            raise ValueError(
                f"action {bad} is out of range: these envs have arms 0..{self.n_arms - 1}"
            )
        return arr.astype(np.int64)

    def step(self, actions: Any):
        """Advance every member one round; returns ``(obs, reward, terminated, truncated,
        info)``."""
        if not self._reset_done:
            raise RuntimeError("call reset() before step()")
        actions = self._check_actions(actions)  # raises before any state changes
        B = self.num_envs
        if self.autoreset_mode == AutoresetMode.DISABLED and self._autoreset.any():
            done = np.flatnonzero(self._autoreset).tolist()
            raise RuntimeError(
                f"sub-envs {done} ended and autoreset_mode is DISABLED: reset them first with "
                "reset(options={'reset_mask': mask})"
            )
        resetting = (
            self._autoreset.copy()
            if self.autoreset_mode == AutoresetMode.NEXT_STEP
            else np.zeros(B, bool)
        )
        stepping = ~resetting
        idx = np.flatnonzero(stepping)
        rows = np.arange(B)
        # -- the round's outcome for the stepping members (batched) --
        best_arm = np.argmax(self._means, axis=1)
        expected = self._means[rows, actions]
        best = self._means[rows, best_arm]
        regret = np.maximum(best - expected, 0.0)
        reward = np.zeros(B, dtype=np.float64)
        if self._gaussian_noise:
            z = np.zeros(B, dtype=np.float64)
            for i in idx:
                z[i] = self.envs[i]._noise_rng.standard_normal()
            noise_std = np.array([env.noise_std for env in self.envs])
            reward[idx] = (expected + noise_std * z)[idx]
        else:
            for i in idx:
                env = self.envs[i]
                reward[i] = env._sample_reward(float(expected[i]), env._noise_rng)
        self._t[idx] += 1
        truncated = np.zeros(B, dtype=np.bool_)
        truncated[idx] = self._t[idx] >= self.horizon
        terminated = np.zeros(B, dtype=np.bool_)
        infos: dict[str, Any] = {}
        m = stepping.copy()
        self._info_arrays(infos, "expected_reward", np.where(m, expected, 0.0), m.copy())
        self._info_arrays(infos, "best_expected_reward", np.where(m, best, 0.0), m.copy())
        self._info_arrays(infos, "regret", np.where(m, regret, 0.0), m.copy())
        self._info_arrays(infos, "best_arm", np.where(m, best_arm, 0).astype(np.int64), m.copy())
        # -- next arm sets: members that go on draw a new round --
        if self.render_mode is not None:
            self._show_members(idx, actions, regret)
        goes_on = stepping & ~truncated
        self._next_round(np.flatnonzero(goes_on))
        # -- resets --
        if self.autoreset_mode == AutoresetMode.SAME_STEP and truncated.any():
            ended = np.flatnonzero(truncated)
            final_obs = np.full(B, None, dtype=object)
            final_info: dict[str, Any] = {}
            for key in _STEP_KEYS:
                vals = infos[key].copy()
                final_info[key] = np.where(truncated, vals, 0).astype(vals.dtype)
                final_info[f"_{key}"] = truncated.copy()
            for i in ended:
                final_obs[i] = self._obs[i].copy()
            infos["final_obs"], infos["_final_obs"] = final_obs, truncated.copy()
            infos["final_info"], infos["_final_info"] = final_info, truncated.copy()
            self._merge_reset_infos(infos, ended)
        elif resetting.any():
            self._merge_reset_infos(infos, np.flatnonzero(resetting))
        self._autoreset = terminated | truncated
        for key in _STEP_KEYS:  # as SyncVectorEnv: a key no member reported is absent
            if not infos[f"_{key}"].any():
                del infos[key], infos[f"_{key}"]
        return (
            self._out(self._obs.copy()),
            self._out(reward),
            self._out(terminated),
            self._out(truncated),
            infos,
        )

    def step_players(self, actions: Any, members: Any):
        """One round of every member for one or more *players* each: player j plays arm
        ``actions[j]`` on member ``members[j]``. Returns ``(obs, rewards, truncated, info)``:
        the next ``(M, K, d)`` arm sets and ``(M,)`` truncations of the members, ``(J,)`` rewards
        and an ``info`` of ``(J,)`` arrays ``expected_reward``, ``best_expected_reward``,
        ``regret`` and the members' ``(M,)`` ``best_arm``.

        Each player gets bit for bit what its own env of the member's seed would give it: the
        arm stream never depends on what is played (the base class draws it from its own
        generator), and the reward's noise is the member's one draw of the round, the same
        whichever arm is played (Gaussian noise; for other reward hooks every player's draw
        starts from the same generator state, and a hook whose draws depend on the arm raises).
        So runs that differ in their agent but share a seed share one member: its arm sets are
        drawn once (this is how a sweep batch plays, :func:`linbandit_gym.batched.play_members`).
        Every member needs a player; there is no autoreset (reset a truncated member first) and
        nothing is rendered.
        """
        if not self._reset_done:
            raise RuntimeError("call reset() before step_players()")
        M = self.num_envs
        members = np.asarray(members)
        if (
            members.ndim != 1
            or not np.issubdtype(members.dtype, np.integer)
            or members.size == 0
            or (members.min() < 0 or members.max() >= M)
        ):
            raise ValueError(
                f"members must be a 1-D array of member indices in [0, {M}), got {members!r}"
            )
        if np.bincount(members, minlength=M).min() == 0:
            raise ValueError(
                f"every member needs a player, got members {members.tolist()} for {M} members"
            )
        actions = self._check_actions(actions, len(members))
        if self._autoreset.any():
            raise RuntimeError(
                f"members {np.flatnonzero(self._autoreset).tolist()} ended: reset them before "
                "stepping"
            )
        best_arm = np.argmax(self._means, axis=1)
        expected = self._means[members, actions]
        best = self._means[np.arange(M), best_arm][members]
        regret = np.maximum(best - expected, 0.0)
        if self._gaussian_noise:
            z = np.array([env._noise_rng.standard_normal() for env in self.envs])
            noise_std = np.array([env.noise_std for env in self.envs])
            reward = expected + noise_std[members] * z[members]  # as each member's own step
        else:
            reward = np.zeros(len(members), dtype=np.float64)
            for i, env in enumerate(self.envs):
                rng = env._noise_rng
                start, end = rng.bit_generator.state, None
                for j in np.flatnonzero(members == i):
                    rng.bit_generator.state = start
                    reward[j] = env._sample_reward(float(expected[j]), rng)
                    if end is None:
                        end = rng.bit_generator.state
                    elif rng.bit_generator.state != end:
                        raise RuntimeError(
                            f"{self.env_class.__name__}._sample_reward draws differently for "
                            "different "
                            "arms: players cannot share a member; give each its own member"
                        )
        self._t += 1
        truncated = self._t >= self.horizon
        self._next_round(np.flatnonzero(~truncated))
        self._autoreset = truncated.copy()
        info = {
            "expected_reward": expected,
            "best_expected_reward": best,
            "regret": regret,
            "best_arm": best_arm,
        }
        return self._out(self._obs.copy()), self._out(reward), self._out(truncated), info

    def _out(self, array: np.ndarray):
        """numpy, or a torch tensor on ``device`` when one was chosen."""
        if self.device is None:
            return array
        import torch

        return torch.from_numpy(array).to(self.device)

    def _merge_reset_infos(self, infos: dict, ended: np.ndarray) -> None:
        """Reset members ``ended`` (seed None); their info is the reset info, as in
        ``SyncVectorEnv``."""
        for i in ended:
            info = self._reset_member(int(i), None, None)
            for key in _STEP_KEYS:
                infos[key][i] = info.get(key, 0)
                infos[f"_{key}"][i] = key in info

    def _show_members(self, idx: np.ndarray, actions: np.ndarray, regret: np.ndarray) -> None:
        """Hand the round just played to members ``idx``, which draw it (only with a
        render_mode)."""
        for i in idx:
            env = self.envs[i]
            env.t = int(self._t[i])
            # copies: the batch buffers are overwritten in place by the next round
            env._arms, env._means = self._obs[i].copy(), self._means[i].copy()
            env._after_step(int(actions[i]), float(regret[i]))

    def render(self) -> tuple | None:
        """Every member's frame, as ``SyncVectorEnv``: a tuple of ``(H, W, 3)`` uint8 arrays
        (``"rgb_array"``); ``"human"`` draws each member's window."""
        if self.render_mode is None:
            return None
        self._name_member_frames()
        return tuple(env.render() for env in self.envs)

    def _name_member_frames(self) -> None:
        """Title the members' frames with this vector env's id (``gym.make_vec`` sets ``spec``
        after construction; the members, built without ``gym.make``, have none)."""
        if self.render_mode is not None and self.spec is not None:
            for env in self.envs:
                env._frame_name = self.spec.id

    def close_extras(self, **kwargs: Any) -> None:
        for env in self.envs:
            env.close()

    @property
    def theta_star(self) -> np.ndarray:
        """The members' theta*, shape ``(num_envs, d)`` (float64)."""
        return self._theta[..., 0].copy()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.env_class.__name__}, num_envs={self.num_envs})"


class SyntheticVectorEnv(LinBanditVectorEnv):
    """``LinBandit-Synthetic-v0`` batched: see :class:`LinBanditVectorEnv` and
    :class:`~linbandit_gym.envs.synthetic.SyntheticLinBanditEnv` for the arguments."""

    env_class = "linbandit_gym.envs.synthetic:SyntheticLinBanditEnv"


def make_vec(
    id: str,  # noqa: A002 - gymnasium.make_vec's name
    num_envs: int = 1,
    vectorization_mode: str | None = None,
    vector_kwargs: dict[str, Any] | None = None,
    wrappers: Any = None,
    **kwargs: Any,
) -> VectorEnv:
    """``gymnasium.make_vec`` that also accepts ``vector_kwargs`` and ``wrappers`` for our ids.

    Gymnasium raises ``gymnasium.error.Error`` for either whenever the id has a native vector
    env, the default of every linbandit id but BAI. Here, with ``vectorization_mode=None``:

    * ``vector_kwargs`` holding only ``autoreset_mode`` -> the native vector env in that mode
      (all three of Gymnasium's modes, same semantics as ``SyncVectorEnv``);
    * ``wrappers`` (or any other ``vector_kwargs``, e.g. ``copy``, which are ``SyncVectorEnv``
      options) -> ``SyncVectorEnv`` over ``wrappers`` applied to each single env: wrappers act
      on single envs, which the native vector env never steps. Members replay the same
      episodes either way; only the speed differs.

    An explicit ``vectorization_mode`` is honoured; ``"vector_entry_point"`` with wrappers or
    with ``vector_kwargs`` other than ``autoreset_mode`` raises a ``ValueError`` saying why.
    Other ids (no native vector env) go to ``gymnasium.make_vec`` unchanged.

    >>> import linbandit_gym
    >>> envs = linbandit_gym.make_vec("LinBandit-Synthetic-v0", num_envs=2, d=3, n_arms=4,
    ...                               vector_kwargs={"autoreset_mode": "SameStep"})
    >>> type(envs).__name__, envs.autoreset_mode.value
    ('SyntheticVectorEnv', 'SameStep')
    """
    import gymnasium as gym
    from gymnasium.envs.registration import VectorizeMode

    vector_kwargs = dict(vector_kwargs or {})
    wrappers = list(wrappers or [])
    env_id = id.id if hasattr(id, "id") else id
    native = supports_vector(
        env_id.rpartition(":")[2]
    )  # "linbandit_gym:LinBandit-..." names the same id
    if vectorization_mode is None:
        only_autoreset = set(vector_kwargs) <= {"autoreset_mode"}
        vectorization_mode = (
            "vector_entry_point" if native and not wrappers and only_autoreset else "sync"
        )
    mode = VectorizeMode(vectorization_mode)
    if not (native and mode == VectorizeMode.VECTOR_ENTRY_POINT):
        try:
            return gym.make_vec(
                id,
                num_envs,
                vectorization_mode=mode,
                vector_kwargs=vector_kwargs,
                wrappers=wrappers,
                **kwargs,
            )
        except gym.error.UnregisteredEnv as exc:
            # Gymnasium's own hint is case-sensitive (LinBandit-Mnist-v0 -> LinBandit-MFeat); ours
            # is not.
            hint = did_you_mean(env_id.rpartition(":")[2], list(gym.registry))
            if not hint:
                raise
            raise type(exc)(f"Environment {env_id!r} doesn't exist{hint}") from None
    if wrappers:
        raise ValueError(
            "wrappers wrap single envs, which the native vector env never steps; use "
            "vectorization_mode='sync' "
            "(or leave vectorization_mode=None: with wrappers it defaults to 'sync')"
        )
    other = sorted(set(vector_kwargs) - {"autoreset_mode"})
    if other:
        raise ValueError(
            f"vector_kwargs {other} are options of Gymnasium's SyncVectorEnv/AsyncVectorEnv; the "
            "native vector env "
            "takes only autoreset_mode. Use vectorization_mode='sync' for them."
        )
    if "autoreset_mode" in vector_kwargs and "autoreset_mode" in kwargs:
        raise ValueError(
            "autoreset_mode was given twice (in vector_kwargs and as a keyword); pass it once"
        )
    return gym.make_vec(id, num_envs, vectorization_mode=mode, **vector_kwargs, **kwargs)


def vector_env_class(env_id: str) -> type | None:
    """The native vector env class registered for ``env_id`` (``None`` if it has none)."""
    import gymnasium as gym

    spec = gym.registry.get(env_id)
    entry = None if spec is None else spec.vector_entry_point
    if entry is None:
        return None
    return _load(entry) if isinstance(entry, str) else entry


def supports_vector(env_id: Any) -> bool:
    """Whether ``env_id`` is a registered id whose vector entry point is one of ours
    (a :class:`LinBanditVectorEnv`), i.e. what the batched run path can drive."""
    if not isinstance(env_id, str):
        return False
    cls = vector_env_class(env_id)
    return isinstance(cls, type) and issubclass(cls, LinBanditVectorEnv)


class HeavyTailVectorEnv(LinBanditVectorEnv):
    """``LinBandit-HeavyTail-v0`` batched: see :class:`LinBanditVectorEnv` and
    :class:`~linbandit_gym.envs.heavy_tail.HeavyTailLinBanditEnv` for the arguments."""

    env_class = "linbandit_gym.envs.heavy_tail:HeavyTailLinBanditEnv"


class LocallyConvexVectorEnv(LinBanditVectorEnv):
    """``LinBandit-LocallyConvex-v0`` batched: see :class:`LinBanditVectorEnv` and
    :class:`~linbandit_gym.envs.locally_convex.LocallyConvexLinBanditEnv` for the arguments."""

    env_class = "linbandit_gym.envs.locally_convex:LocallyConvexLinBanditEnv"


class ClassificationVectorEnv(LinBanditVectorEnv):
    """``LinBandit-MNIST-v0`` / ``LinBandit-Classification-v0`` batched: see
    :class:`LinBanditVectorEnv` and
    :class:`~linbandit_gym.envs.classification.ClassificationBanditEnv`. The dataset is loaded once
    and shared by the members; the class-indicator reward is taken per member."""

    env_class = "linbandit_gym.envs.classification:ClassificationBanditEnv"
    share_data = True


class DigitsVectorEnv(ClassificationVectorEnv):
    """``LinBandit-Digits-v0`` batched (see :class:`ClassificationVectorEnv`)."""

    env_class = "linbandit_gym.envs.classification:DigitsBanditEnv"


class CNAE9VectorEnv(ClassificationVectorEnv):
    """``LinBandit-CNAE9-v0`` batched (see :class:`ClassificationVectorEnv`)."""

    env_class = "linbandit_gym.envs.classification:CNAE9BanditEnv"


class MFeatVectorEnv(ClassificationVectorEnv):
    """``LinBandit-MFeat-v0`` batched (see :class:`ClassificationVectorEnv`)."""

    env_class = "linbandit_gym.envs.classification:MFeatBanditEnv"


class SpamVectorEnv(ClassificationVectorEnv):
    """``LinBandit-Spam-v0`` batched (see :class:`ClassificationVectorEnv`)."""

    env_class = "linbandit_gym.envs.classification:SpamBanditEnv"
