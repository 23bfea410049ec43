"""``respond``: status codes and Go-identical bytes."""

from __future__ import annotations

from pineapple import Context
from pineapple.engine import Engine
from pineapple.engine.http import STATUS_UNKNOWN_GROUP, encode_response, respond

from ._configs import config, op


def _engine() -> Engine:
    return Engine(
        config(
            {
                "copy": op(
                    "transform_copy",
                    direction="common_to_common",
                    meta={"common_input": ["a"], "common_output": ["b"]},
                )
            },
            contract={"common_input": ["a"], "common_output": ["b"], "item_output": ["x"]},
        )
    )


def test_success_bytes() -> None:
    status, body = respond(_engine(), Context(), b'{"common":{"a":1.0},"items":[{"x":"<&>"}]}')
    assert status == 200
    assert body == b'{"common":{"b":1},"items":[{"x":"\\u003c\\u0026\\u003e"}]}\n'


def test_malformed_json_is_400() -> None:
    status, body = respond(_engine(), None, b"{nope")
    assert status == 400
    assert body.startswith(b'{"error":"invalid request: the body is not valid JSON (at line 1')
    # Plain words, not the parser's internals.
    status, body = respond(_engine(), None, b"nul")
    assert body == (
        b'{"error":"invalid request: the body is not valid JSON (at line 1, column 4, '
        b'byte 3): unexpected end of data"}\n'
    )


def test_wrong_shapes_are_400_with_go_wording() -> None:
    assert respond(_engine(), None, b"[]") == (
        400,
        b'{"error":"invalid request: json: cannot unmarshal array into Go value of type '
        b'server.executeRequest"}\n',
    )
    status, body = respond(_engine(), None, b'{"common":{"a":1},"items":{}}')
    assert status == 400 and b"executeRequest.items" in body


def test_contract_violation_is_400_with_null_result_as_go_answers() -> None:
    status, body = respond(_engine(), None, b'{"common":{}}')
    assert status == 400
    assert body == (
        b'{"common":null,"items":null,"error":"pine: validation error: '
        b'missing required common input field \\"a\\""}\n'
    )


def test_missing_common_is_400() -> None:
    status, body = respond(_engine(), None, b'{"items":[]}')
    assert status == 400 and b"request.Common must not be nil" in body


def test_encode_response_orders_warnings_before_error() -> None:
    body = encode_response({"z": 1e-7, "a": 2.5e-6}, [], ["w"], "boom")
    assert (
        body == b'{"common":{"a":0.0000025,"z":1e-7},"items":[],"warnings":["w"],"error":"boom"}\n'
    )


def test_unknown_pipeline_group_is_404() -> None:
    config = {
        "pipeline_config": {
            "operators": {
                "s": {
                    "type_name": "recall_static",
                    "items": [{"id": 1}],
                    "$metadata": {"item_output": ["id"]},
                }
            }
        },
        "pipeline_group": {"main": {"pipeline": ["s"]}},
        "flow_contract": {"item_output": ["id"]},
    }
    engine = Engine(config)
    body = b'{"common": {}, "items": []}'
    assert respond(engine, None, body, "main") == respond(engine, None, body)
    status, out = respond(engine, None, body, "other")
    assert status == STATUS_UNKNOWN_GROUP == 404
    assert b"unknown pipeline group 'other'" in out
