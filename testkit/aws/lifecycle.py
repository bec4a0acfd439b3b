"""Auto Scaling lifecycle hooks that wait: a test-kit addition to moto.

What moto 5.2.5 does by itself (kept as it is):
  - groups, launch templates, instances, `PutLifecycleHook`,
    `DescribeLifecycleHooks` (with `HeartbeatTimeout` and `DefaultResult`);
  - EC2 `TerminateInstances` of a group's instance: terminated at once and
    replaced by the group (`notify_terminate_instances`), as on AWS.

What moto lacks and this module adds, by patching moto's classes in this
process when `install()` is called (site-packages are never edited):
  - a scale-in (`SetDesiredCapacity`, `UpdateAutoScalingGroup`) or a
    `TerminateInstanceInAutoScalingGroup` of a group that has a lifecycle
    hook for `autoscaling:EC2_INSTANCE_TERMINATING` puts the instance in
    `Terminating:Wait`: the EC2 instance keeps running and stays listed in
    the group with that state, but no longer counts toward the desired
    capacity; it goes to `Terminating:Proceed` (EC2 terminated, out of the
    group) on `CompleteLifecycleAction` or when the hook's heartbeat
    timeout passes (its `DefaultResult` applies);
  - the `CompleteLifecycleAction` and `RecordLifecycleActionHeartbeat` API
    actions (moto answers them with a 500 NotImplementedError), and a record
    of every call of them (`records()`);
  - which instance a scale-in removes: AWS's default termination policy
    balances the zones (the zone with most in-service instances loses one,
    its oldest), where moto takes the first ones of its list, whatever their
    state;
  - which subnet a launch uses: AWS balances the group's zones, where moto
    launches every instance into the first subnet of `VPCZoneIdentifier`.

Group deletion (`DeleteAutoScalingGroup`) terminates at once, hooks or not
(AWS's `ForceDelete`).

Locking: every EC2 and Auto Scaling request of the emulator, and the kit's
own threads, hold `LOCK` while they read or change moto's state.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass

from moto.autoscaling import models as asg_models
from moto.autoscaling.exceptions import ValidationError
from moto.autoscaling.responses import AutoScalingResponse
from moto.core.responses import EmptyResult

TERMINATING_TRANSITION = "autoscaling:EC2_INSTANCE_TERMINATING"
WAIT = "Terminating:Wait"
PROCEED = "Terminating:Proceed"
IN_SERVICE = "InService"
# AWS: a lifecycle action lasts at most 100 heartbeat timeouts or 48 hours,
# whichever is smaller, however often its heartbeat is recorded.
GLOBAL_TIMEOUT_FACTOR = 100
GLOBAL_TIMEOUT_MAX = 172800

# Serializes moto's EC2 and Auto Scaling state between request threads and
# the kit's poller (re-entrant: a request that completes an action holds it
# already).
LOCK = threading.RLock()

_records: list[dict] = []
_installed = False


@dataclass
class PendingAction:
    """One lifecycle action in progress: an instance waiting for one hook."""

    group: str
    hook: str
    instance_id: str
    token: str
    heartbeat_timeout: int
    default_result: str
    deadline: float  # time.monotonic() at which the default result applies
    global_deadline: float


def records() -> list[dict]:
    """Every CompleteLifecycleAction / RecordLifecycleActionHeartbeat call
    (failed ones too, with their error) and every heartbeat timeout, oldest
    first."""
    with LOCK:
        return [dict(r) for r in _records]


def pending() -> list[dict]:
    """The lifecycle actions in progress, for debugging."""
    with LOCK:
        now = time.monotonic()
        return [
            {
                "group": a.group,
                "hook": a.hook,
                "instance_id": a.instance_id,
                "token": a.token,
                "seconds_left": max(0.0, a.deadline - now),
            }
            for group in _all_groups()
            for a in _pending_of(group).values()
        ]


def _record(action: str, **fields) -> None:
    entry = {
        "action": action,
        "group": fields.get("group"),
        "hook": fields.get("hook"),
        "instance_id": fields.get("instance_id"),
        "token": fields.get("token"),
        "result": fields.get("result"),
        "time": time.time(),
        "error": fields.get("error"),
    }
    _records.append(entry)


def _all_groups() -> list:
    groups = []
    for account in list(asg_models.autoscaling_backends.values()):
        for backend in list(account.values()):
            groups.extend(list(backend.autoscaling_groups.values()))
    return groups


def _pending_of(group) -> dict[tuple[str, str], PendingAction]:
    """The group's actions in progress, by (instance id, hook name)."""
    if not hasattr(group, "_testkit_pending"):
        group._testkit_pending = {}
    return group._testkit_pending


def terminating_hooks(group) -> list:
    """The group's lifecycle hooks for EC2_INSTANCE_TERMINATING (none while
    the group is being deleted)."""
    if getattr(group, "_testkit_force_delete", False):
        return []
    hooks = group.autoscaling_backend.lifecycle_hooks.values()
    return sorted(
        (
            h
            for h in hooks
            if h.auto_scaling_group_name == group.name
            and h.lifecycle_transition == TERMINATING_TRANSITION
        ),
        key=lambda h: h.name,
    )


def _update_attachments(group) -> None:
    """What moto does after a capacity change (load balancers, target groups)."""
    backend = group.autoscaling_backend
    if group.name in backend.autoscaling_groups:
        backend.update_attached_elbs(group.name)
        backend.update_attached_target_groups(group.name)


def _begin_wait(group, state, hooks) -> None:
    state.lifecycle_state = WAIT
    now = time.monotonic()
    for hook in hooks:
        timeout = int(hook.heartbeat_timeout)
        limit = min(GLOBAL_TIMEOUT_FACTOR * timeout, GLOBAL_TIMEOUT_MAX)
        _pending_of(group)[(state.instance.id, hook.name)] = PendingAction(
            group=group.name,
            hook=hook.name,
            instance_id=state.instance.id,
            token=str(uuid.uuid4()),
            heartbeat_timeout=timeout,
            default_result=hook.default_result or "ABANDON",
            deadline=now + timeout,
            global_deadline=now + limit,
        )


def _terminate_now(group, states) -> None:
    """Terminates the EC2 instances of `states` and takes them out of the group."""
    if not states:
        return
    ids = [s.instance.id for s in states]
    for state in states:
        state.lifecycle_state = PROCEED
    group.autoscaling_backend.ec2_backend.terminate_instances(ids)
    group.instance_states = [s for s in group.instance_states if s not in states]
    for key in [k for k in _pending_of(group) if k[0] in ids]:
        del _pending_of(group)[key]


def _proceed(group, instance_id: str) -> None:
    states = [s for s in group.instance_states if s.instance.id == instance_id]
    _terminate_now(group, states)
    _update_attachments(group)


def _finish(group, action: PendingAction, result: str) -> None:
    """One hook's action ends with `result`. For a terminating instance,
    ABANDON ends the other hooks' actions too; CONTINUE waits for them. Both
    terminate the instance in the end."""
    pend = _pending_of(group)
    pend.pop((action.instance_id, action.hook), None)
    others = [k for k in pend if k[0] == action.instance_id]
    if result == "ABANDON" or not others:
        _proceed(group, action.instance_id)


def _choose_scale_in(group, count: int) -> list:
    """AWS's default termination policy, simplified: repeatedly, the zone
    with most in-service unprotected instances loses its oldest one."""
    candidates = [
        s
        for s in group.instance_states
        if s.lifecycle_state == IN_SERVICE and not s.protected_from_scale_in
    ]
    chosen = []
    for _ in range(min(count, len(candidates))):
        per_zone: dict[str, int] = {}
        for s in candidates:
            per_zone[s.instance.placement.zone] = per_zone.get(s.instance.placement.zone, 0) + 1
        most = max(per_zone.values())
        victim = next(s for s in candidates if per_zone[s.instance.placement.zone] == most)
        candidates.remove(victim)
        chosen.append(victim)
    return chosen


# --- patches of moto's classes ---------------------------------------------

_orig_set_desired_capacity = asg_models.FakeAutoScalingGroup.set_desired_capacity
_orig_replace_instances = asg_models.FakeAutoScalingGroup.replace_autoscaling_group_instances
_orig_terminate_instance = asg_models.AutoScalingBackend.terminate_instance
_orig_delete_group = asg_models.AutoScalingBackend.delete_auto_scaling_group


def _set_desired_capacity(self, new_capacity):
    """FakeAutoScalingGroup.set_desired_capacity with the kit's scale-in:
    the instances it removes wait for the termination hooks, if any. Growth,
    and groups with a mixed-instances policy, are moto's own code."""
    mixed = self.mixed_instances_policy and len(
        self.mixed_instances_policy.get("LaunchTemplate", {}).get("Overrides", [])
    )
    desired = self.min_size if new_capacity is None else new_capacity
    surplus = len(self.active_instances()) - (desired or 0)
    if mixed or surplus <= 0:
        return _orig_set_desired_capacity(self, new_capacity)
    self.desired_capacity = desired
    victims = _choose_scale_in(self, surplus)
    hooks = terminating_hooks(self)
    if hooks:
        for state in victims:
            _begin_wait(self, state, hooks)
    else:
        _terminate_now(self, victims)
    _update_attachments(self)
    return None


def _replace_instances(self, count_needed, propagated_tags):
    """FakeAutoScalingGroup.replace_autoscaling_group_instances, one instance
    at a time into the subnet with fewest live instances (first in
    `VPCZoneIdentifier` order on a tie), so a group spreads over its zones
    as on AWS. moto's own launch code does each launch."""
    subnets = [s for s in (self.vpc_zone_identifier or "").split(",") if s]
    if len(subnets) <= 1:
        return _orig_replace_instances(self, count_needed, propagated_tags)
    configured = self.vpc_zone_identifier
    try:
        for _ in range(count_needed):
            live = {s: 0 for s in subnets}
            for state in self.instance_states:
                subnet = state.instance.subnet_id
                if subnet in live and not state.lifecycle_state.startswith("Terminating"):
                    live[subnet] += 1
            # moto launches into the first subnet of this field.
            self.vpc_zone_identifier = min(subnets, key=lambda s: live[s])
            _orig_replace_instances(self, 1, dict(propagated_tags))
    finally:
        self.vpc_zone_identifier = configured
    return None


def _terminate_instance(self, instance_id, should_decrement):
    """AutoScalingBackend.terminate_instance (TerminateInstanceInAutoScalingGroup):
    with a termination hook, the instance waits (a replacement is launched
    at once unless the desired capacity is decremented); without one,
    moto's own code."""
    state = next(
        (
            s
            for group in self.autoscaling_groups.values()
            for s in group.instance_states
            if s.instance.id == instance_id
        ),
        None,
    )
    if state is None:
        raise ValidationError(
            f"Instance Id not found - No managed instance found for instance ID: {instance_id}"
        )
    group = state.auto_scaling_group
    hooks = terminating_hooks(group)
    if not hooks:
        return _orig_terminate_instance(self, instance_id, should_decrement)
    if state.lifecycle_state.startswith("Terminating"):
        raise ValidationError(f"The instance {instance_id} is already terminating.")
    original_size = group.desired_capacity
    if should_decrement:
        if group.desired_capacity - 1 < (group.min_size or 0):
            raise ValidationError(
                f"Currently, desiredSize equals minSize ({group.min_size}). Terminating "
                "instance without replacement will violate group's min size constraint. "
                "Either set shouldDecrementDesiredCapacity flag to false or lower group's "
                "min size."
            )
        group.desired_capacity -= 1
    _begin_wait(group, state, hooks)
    activity = asg_models.TerminateInstanceActivity(state.instance, original_size)
    # Launches the replacement when the capacity was not decremented (the
    # waiting instance no longer counts).
    group.set_desired_capacity(group.desired_capacity)
    return activity


def _delete_group(self, group_name):
    """AutoScalingBackend.delete_auto_scaling_group: terminates every instance
    at once, waiting ones included (AWS's ForceDelete)."""
    group = self.autoscaling_groups.get(group_name)
    if group is not None:
        group._testkit_force_delete = True
        _terminate_now(
            group,
            [s for s in group.instance_states if s.lifecycle_state.startswith("Terminating")],
        )
    return _orig_delete_group(self, group_name)


# --- the two API actions moto does not implement ----------------------------


def _find_action(group, hook_name, token, instance_id) -> PendingAction:
    for action in _pending_of(group).values():
        if action.hook != hook_name:
            continue
        if token and action.token == token:
            return action
        if not token and instance_id and action.instance_id == instance_id:
            return action
    if token:
        raise ValidationError(f"No active Lifecycle Action found with token {token}")
    raise ValidationError(f"No active Lifecycle Action found with instance ID {instance_id}")


def _lookup(backend, group_name, hook_name, token, instance_id):
    if not token and not instance_id:
        raise ValidationError("Either LifecycleActionToken or InstanceId must be specified.")
    group = backend.autoscaling_groups.get(group_name)
    if group is None:
        raise ValidationError(f"AutoScalingGroup name not found - {group_name}")
    if f"{group_name}_{hook_name}" not in backend.lifecycle_hooks:
        raise ValidationError(f"No Lifecycle Hook found with name: {hook_name}")
    return group, _find_action(group, hook_name, token, instance_id)


def complete_lifecycle_action(backend, group_name, hook_name, token, instance_id, result):
    """CompleteLifecycleAction, recorded whether it succeeds or not."""
    with LOCK:
        fields = dict(group=group_name, hook=hook_name, instance_id=instance_id, token=token, result=result)
        try:
            if result not in ("CONTINUE", "ABANDON"):
                raise ValidationError(
                    f"Value '{result}' at 'lifecycleActionResult' failed to satisfy "
                    "constraint: Member must be CONTINUE or ABANDON"
                )
            group, action = _lookup(backend, group_name, hook_name, token, instance_id)
            fields.update(instance_id=action.instance_id, token=action.token)
            _finish(group, action, result)
        except ValidationError as err:
            _record("CompleteLifecycleAction", error=err.message, **fields)
            raise
        _record("CompleteLifecycleAction", **fields)


def record_lifecycle_action_heartbeat(backend, group_name, hook_name, token, instance_id):
    """RecordLifecycleActionHeartbeat: restarts the action's heartbeat
    timeout (within its global timeout); recorded whether it succeeds or not."""
    with LOCK:
        fields = dict(group=group_name, hook=hook_name, instance_id=instance_id, token=token)
        try:
            _, action = _lookup(backend, group_name, hook_name, token, instance_id)
        except ValidationError as err:
            _record("RecordLifecycleActionHeartbeat", error=err.message, **fields)
            raise
        action.deadline = min(time.monotonic() + action.heartbeat_timeout, action.global_deadline)
        fields.update(instance_id=action.instance_id, token=action.token)
        _record("RecordLifecycleActionHeartbeat", **fields)


def _response_complete_lifecycle_action(self):
    complete_lifecycle_action(
        self.autoscaling_backend,
        self._get_param("AutoScalingGroupName"),
        self._get_param("LifecycleHookName"),
        self._get_param("LifecycleActionToken"),
        self._get_param("InstanceId"),
        self._get_param("LifecycleActionResult"),
    )
    return EmptyResult()


def _response_record_lifecycle_action_heartbeat(self):
    record_lifecycle_action_heartbeat(
        self.autoscaling_backend,
        self._get_param("AutoScalingGroupName"),
        self._get_param("LifecycleHookName"),
        self._get_param("LifecycleActionToken"),
        self._get_param("InstanceId"),
    )
    return EmptyResult()


def tick() -> None:
    """Run by the kit's poller: applies the default result of every action
    whose heartbeat timeout passed, and forgets the actions of instances no
    longer in their group (terminated directly through EC2)."""
    with LOCK:
        now = time.monotonic()
        for group in _all_groups():
            pend = _pending_of(group)
            members = {s.instance.id for s in group.instance_states}
            for key, action in list(pend.items()):
                if key not in pend:
                    continue  # finished by an ABANDON of another hook below
                if action.instance_id not in members:
                    del pend[key]
                elif now >= min(action.deadline, action.global_deadline):
                    _record(
                        "HeartbeatTimeout",
                        group=action.group,
                        hook=action.hook,
                        instance_id=action.instance_id,
                        token=action.token,
                        result=action.default_result,
                    )
                    _finish(group, action, action.default_result)


def install() -> None:
    """Patches moto's Auto Scaling classes (once per process)."""
    global _installed
    if _installed:
        return
    asg_models.FakeAutoScalingGroup.set_desired_capacity = _set_desired_capacity
    asg_models.FakeAutoScalingGroup.replace_autoscaling_group_instances = _replace_instances
    asg_models.AutoScalingBackend.terminate_instance = _terminate_instance
    asg_models.AutoScalingBackend.delete_auto_scaling_group = _delete_group
    # moto dispatches an action to the AutoScalingResponse method of the
    # same name in snake case.
    AutoScalingResponse.complete_lifecycle_action = _response_complete_lifecycle_action
    AutoScalingResponse.record_lifecycle_action_heartbeat = (
        _response_record_lifecycle_action_heartbeat
    )
    _installed = True
