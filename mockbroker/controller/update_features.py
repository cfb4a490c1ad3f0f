"""UpdateFeatures: finalizing feature levels (metadata.version, eligible.leader.replicas)."""

from __future__ import annotations

from typing import Any

from kipwire.codec import ConfigResourceType, ErrorCode

from .configs import MIN_ISR
from .draft import Draft
from .features import CONTROLLER_FEATURES, ELR_VERSION, METADATA_VERSION, MV_4_0_IV1
from .result import ControllerResult, ControllerView


def _check_update(draft: Draft, version: int, update: Any, levels: dict[str, int]) -> str | None:
    name, level = update["feature"], update["max_version_level"]
    supported = CONTROLLER_FEATURES[draft.settings.semantics.release]
    if name not in supported:
        return f"the controller does not know feature {name!r}"
    low, high = supported[name]
    if level != 0 and not low <= level <= high:
        return f"{name} level {level} is outside {low}-{high}"
    current = levels.get(name, 0 if name != METADATA_VERSION else draft.state.metadata_version)
    downgrade_allowed = update["allow_downgrade"] if version == 0 else update["upgrade_type"] > 1
    if level < current and not downgrade_allowed:
        return f"{name} {current} -> {level} is a downgrade"
    if (
        name == ELR_VERSION
        and level >= 1
        and levels.get(METADATA_VERSION, draft.state.metadata_version) < MV_4_0_IV1
    ):
        return f"{ELR_VERSION} needs metadata.version >= {MV_4_0_IV1}"
    return None


def update_features(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """UpdateFeatures v0-v2: FeatureLevelRecords, all or none; enabling ELR pins min ISR (D.19)."""
    draft = Draft(view)
    levels = dict(draft.state.features)
    results, first_error = [], None
    for update in body["feature_updates"]:
        problem = _check_update(draft, version, update, levels)
        code = ErrorCode.NONE if problem is None else ErrorCode.INVALID_UPDATE_VERSION
        if problem is None:
            levels[update["feature"]] = update["max_version_level"]
        elif first_error is None:
            first_error = (code, problem)
        results.append({"feature": update["feature"], "error_code": code, "error_message": problem})
    if first_error is None and not body.get("validate_only", False):
        enabling_elr = not draft.state.elr_enabled
        for update in body["feature_updates"]:
            draft.add(
                "FeatureLevelRecord",
                {"name": update["feature"], "feature_level": update["max_version_level"]},
            )
        pinned = draft.state.config(ConfigResourceType.BROKER, "", MIN_ISR) is not None
        if enabling_elr and draft.state.elr_enabled and not pinned:
            draft.add(
                "ConfigRecord",
                {
                    "resource_type": ConfigResourceType.BROKER,
                    "resource_name": "",
                    "name": MIN_ISR,
                    "value": "1",
                },
            )
    code, message = first_error or (ErrorCode.NONE, None)
    response = {"error_code": code, "error_message": message}
    if version < 2:
        response["results"] = results
    return draft.result(response)
