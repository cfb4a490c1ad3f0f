"""The config APIs (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs) and the records a
config change writes: ConfigRecords, then D.19's ClearElrRecord on a min ISR change."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kipwire.codec import AlterConfigOp, ConfigResourceType, ConfigSource, ErrorCode

from .broker_configs import BROKER, SYNONYMS, broker_config_problem, dynamic_problem, normalise
from .client_metrics_configs import check_client_metrics, describe_client_metrics
from .config_synonyms import broker_name, broker_synonyms, is_static, topic_synonyms
from .configs import MIN_ISR, known, resolve, validate
from .draft import Draft
from .group_configs import check_group_config, describe_group
from .result import ControllerResult, ControllerView


def write_configs(draft: Draft, resource_type: int, resource_name: str, changes: dict) -> None:
    """ConfigRecords for `changes` (None deletes), then ClearElrRecord on a min ISR change (D.19).

    As Kafka's ConfigurationControlManager, a topic config set to its current value writes
    nothing, so the ELR stays; broker and cluster configs are always written (KAFKA-14136: the
    record makes brokers reload them).
    """
    if resource_type != ConfigResourceType.BROKER:
        current = draft.state.configs.get((resource_type, resource_name), {})
        changes = {name: value for name, value in changes.items() if current.get(name) != value}
    for name, value in changes.items():
        draft.add(
            "ConfigRecord",
            {
                "resource_type": resource_type,
                "resource_name": resource_name,
                "name": name,
                "value": value,
            },
        )
    if (
        MIN_ISR in changes
        and draft.settings.semantics.clear_elr_on_min_isr_change
        and draft.state.elr_enabled
    ):
        topic = resource_name if resource_type == ConfigResourceType.TOPIC else ""
        draft.add("ClearElrRecord", {"topic_name": topic})


def _check_resource(draft: Draft, resource_type: int, name: str) -> tuple[int, str] | None:
    if resource_type == ConfigResourceType.TOPIC:
        if draft.state.topic(name) is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {name!r}"
        return None
    if resource_type == ConfigResourceType.BROKER:
        if name and not name.isdigit():
            return ErrorCode.INVALID_REQUEST, f"broker resource name {name!r} is not a broker id"
        return None
    if resource_type == ConfigResourceType.GROUP:
        return None if name else (ErrorCode.INVALID_REQUEST, "a group resource needs a group id")
    if resource_type == ConfigResourceType.CLIENT_METRICS:
        return check_client_metrics(name, {})
    return ErrorCode.INVALID_REQUEST, f"resource type {resource_type} has no configs here"


def _check_changes(
    draft: Draft, resource_type: int, name: str, changes: Mapping[str, str | None]
) -> tuple[int, str] | None:
    release = draft.settings.semantics.release
    if resource_type == ConfigResourceType.CLIENT_METRICS:
        return check_client_metrics(name, dict(changes))
    for key, value in changes.items():
        if resource_type == ConfigResourceType.GROUP:
            problem = check_group_config(key, value)
            if problem is not None:
                return ErrorCode.INVALID_CONFIG, problem
            continue
        if resource_type == ConfigResourceType.BROKER:
            # a broker resource takes broker configs and the topic configs' cluster defaults
            problem = broker_config_problem(key, value, release) or dynamic_problem(key)
        else:
            problem = validate(key, value, release)
            problem = None if problem is None else f"{key}: {problem}"
        if problem is not None:
            return ErrorCode.INVALID_CONFIG, problem
        # D.19: while ELR is on, min ISR lives at the cluster level only, and stays there.
        if (
            key == MIN_ISR
            and resource_type == ConfigResourceType.BROKER
            and draft.state.elr_enabled
        ):
            if name:
                return ErrorCode.INVALID_CONFIG, "broker-level min.insync.replicas with ELR on"
            if value is None:
                return ErrorCode.INVALID_CONFIG, "cluster min.insync.replicas cannot be deleted"
    return None


def _result(resource: Any, error: tuple[int, str] | None) -> dict:
    code, message = error if error is not None else (ErrorCode.NONE, None)
    return {
        "error_code": code,
        "error_message": message,
        "resource_type": resource["resource_type"],
        "resource_name": resource["resource_name"],
    }


def incremental_alter_configs(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """IncrementalAlterConfigs v0-v1: SET and DELETE per config (D.19 on min ISR)."""
    draft = Draft(view)
    responses = []
    for res in body["resources"]:
        rtype, rname = res["resource_type"], res["resource_name"]
        error = _check_resource(draft, rtype, rname)
        changes: dict[str, str | None] = {}
        for cfg in res["configs"] if error is None else ():
            op = cfg["config_operation"]
            if op == AlterConfigOp.SET:
                changes[cfg["name"]] = cfg["value"]
            elif op == AlterConfigOp.DELETE:
                changes[cfg["name"]] = None
            else:
                # APPEND and SUBTRACT apply to list configs only; the configs here are scalars.
                error = ErrorCode.INVALID_CONFIG, f"{cfg['name']} is not a list config"
                break
        if error is None:
            error = _check_changes(draft, rtype, rname, changes)
        if error is None and not body["validate_only"]:
            write_configs(draft, rtype, rname, _stored(rtype, changes))
        responses.append(_result(res, error))
    return draft.result({"responses": responses})


def _stored(resource_type: int, changes: dict[str, str | None]) -> dict[str, str | None]:
    """Broker changes with Kafka's log.* synonyms under the topic config they default."""
    return normalise(changes) if resource_type == ConfigResourceType.BROKER else changes


def alter_configs(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """AlterConfigs v0-v2: the given set replaces the resource's configs (D.19 on min ISR)."""
    draft = Draft(view)
    responses = []
    for res in body["resources"]:
        rtype, rname = res["resource_type"], res["resource_name"]
        error = _check_resource(draft, rtype, rname)
        changes: dict[str, str | None] = {c["name"]: c["value"] for c in res["configs"]}
        if error is None:
            for old in draft.state.configs.get((rtype, rname), {}):
                changes.setdefault(old, None)
            error = _check_changes(draft, rtype, rname, changes)
        if error is None and not body["validate_only"]:
            write_configs(draft, rtype, rname, _stored(rtype, changes))
        responses.append(_result(res, error))
    return draft.result({"responses": responses})


def _describe_one(
    draft: Draft, version: int, rtype: int, rname: str, keys: Any, synonyms: bool = False
) -> list[dict]:
    state = draft.state
    if rtype == ConfigResourceType.GROUP:
        return describe_group(state, version, rname, keys, synonyms)
    if rtype == ConfigResourceType.CLIENT_METRICS:
        return describe_client_metrics(state, version, rname, keys, synonyms)
    static = draft.settings.static_configs
    configs = known(draft.settings.semantics.release)
    if rtype == ConfigResourceType.BROKER and not rname:
        return _describe_cluster_default(draft, version, keys, synonyms)
    out = []
    # a broker resource also describes the broker configs (not the log.* synonyms, which are
    # stored and described under the topic config they default)
    names = configs.keys() if rtype == ConfigResourceType.TOPIC else BROKER.keys() - SYNONYMS
    for name in sorted(names | configs.keys()):
        if keys is not None and name not in keys:
            continue
        if rtype == ConfigResourceType.TOPIC:
            value, source = resolve(state, rname, name)
            found = topic_synonyms(state, static, rname, name)
        else:
            value = state.config(ConfigResourceType.BROKER, rname, name)
            source = ConfigSource.DYNAMIC_BROKER_CONFIG
            if value is None:
                value = state.config(ConfigResourceType.BROKER, "", name)
                source = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
            if value is None:
                value = configs[name][0] if name in configs else BROKER[name].default
                source = ConfigSource.DEFAULT_CONFIG
            found = broker_synonyms(state, static, broker_name(name), rname)
        if source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG and is_static(state, static, name):
            source = ConfigSource.STATIC_BROKER_CONFIG
        out.append(_entry(version, name, value, source, found if synonyms else []))
    return out


def _describe_cluster_default(draft: Draft, version: int, keys: Any, synonyms: bool) -> list[dict]:
    """The cluster default broker resource: as Kafka, only the configs set dynamically there,
    under their broker names (log.retention.ms, not the retention.ms the mock stores)."""
    state, static = draft.state, draft.settings.static_configs
    out = []
    for stored, value in sorted(state.configs.get((ConfigResourceType.BROKER, ""), {}).items()):
        name = broker_name(stored)
        if is_static(state, static, stored) or (keys is not None and name not in keys):
            continue
        found = broker_synonyms(state, static, name, "") if synonyms else []
        out.append(_entry(version, name, value, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, found))
    return out


def _entry(version: int, name: str, value: str, source: int, found: list[dict]) -> dict:
    entry = {"name": name, "value": value, "read_only": False, "is_sensitive": False}
    if version == 0:
        entry["is_default"] = source == ConfigSource.DEFAULT_CONFIG
    else:
        entry["config_source"] = source
        entry["synonyms"] = found
    return entry


def describe_configs(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """DescribeConfigs v0-v4 for topics and brokers (the configs the release knows); writes
    nothing."""
    draft = Draft(view)
    results = []
    for res in body["resources"]:
        rtype, rname = res["resource_type"], res["resource_name"]
        error = _check_resource(draft, rtype, rname)
        result = _result(res, error)
        keys = res["configuration_keys"]
        synonyms = bool(body.get("include_synonyms"))
        result["configs"] = (
            [] if error else _describe_one(draft, version, rtype, rname, keys, synonyms)
        )
        results.append(result)
    return draft.result({"results": results})
