"""What a routine class may declare about itself: a ``signature`` (a plain dict, or a method
returning one) naming its inputs and outputs, or a ``metadata()`` method returning a
:class:`flask_predict.ModelMetadata`."""

from __future__ import annotations

from typing import Any, Mapping

from flask_predict.plugin import (DEFAULT_SIGNATURE, V2_TO_NUMPY, ModelMetadata, Signature,
                                  TensorSpec)

from .modules import VersionModules


def declared_by(user: Any, modules: VersionModules) -> ModelMetadata | None:
    """What *user* (a routine instance) declares, asked with its version active; ``None``
    when it declares nothing."""
    metadata = getattr(user, "metadata", None)
    signature = getattr(user, "signature", None)
    if callable(metadata):
        found = modules.call(metadata)
        if not isinstance(found, ModelMetadata):
            raise TypeError("metadata() must return a flask_predict.ModelMetadata")
        return found
    if signature is None:
        return None
    return declared_metadata(modules.call(signature) if callable(signature) else signature)


def declared_metadata(declared: Any) -> ModelMetadata:
    """The metadata a class's ``signature`` dict declares (``inputs`` and ``outputs``, each a
    list of ``{"name", "datatype", "shape"}`` with V2 datatypes and -1 for any size).
    Raises ``TypeError`` naming the mistake, so a wrong declaration stops the server at boot."""
    if not isinstance(declared, Mapping) or set(declared) - {"inputs", "outputs"} or not (
            declared.get("inputs") and declared.get("outputs")):
        raise TypeError("signature must be a dict with 'inputs' and 'outputs' lists")
    return ModelMetadata(platform="custom", signatures={DEFAULT_SIGNATURE: Signature(
        inputs=_specs(declared["inputs"], "inputs"),
        outputs=_specs(declared["outputs"], "outputs"))})


def _specs(items: Any, where: str) -> tuple[TensorSpec, ...]:
    if not isinstance(items, (list, tuple)):
        raise TypeError(f"signature {where!r} must be a list")
    specs = []
    for item in items:
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str) or not \
                item["name"]:
            raise TypeError(f"signature {where!r}: each tensor needs a 'name'")
        datatype = item.get("datatype", "BYTES")
        if datatype not in V2_TO_NUMPY:
            raise TypeError(f"signature {where!r}: tensor {item['name']!r} has unknown "
                            f"datatype {datatype!r}; use one of {sorted(V2_TO_NUMPY)}")
        shape = item.get("shape")
        if shape is not None and (not isinstance(shape, (list, tuple)) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d >= -1 for d in shape)):
            raise TypeError(f"signature {where!r}: tensor {item['name']!r} needs a 'shape' of "
                            "sizes (-1 for any)")
        specs.append(TensorSpec(item["name"], datatype,
                                tuple(shape) if shape is not None else None))
    if len({spec.name for spec in specs}) != len(specs):
        raise TypeError(f"signature {where!r}: tensor names must be unique")
    return tuple(specs)
