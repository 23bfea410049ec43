from apple import Flow

flow = Flow(name="nested_if", common_input=["a", "b"], common_output=["path"])
flow.if_("{{a}} > 0").if_("{{b}} > 0").transform_by_lua(
    common_input=["a", "b"],
    common_output=["path"],
    lua_script="function f() return 'both' end",
    function_for_common="f",
    function_for_item="",
).else_().transform_by_lua(
    common_input=["a"],
    common_output=["path"],
    lua_script="function g() return 'a_only' end",
    function_for_common="g",
    function_for_item="",
).end_if_().else_().transform_by_lua(
    common_output=["path"],
    lua_script="function h() return 'none' end",
    function_for_common="h",
    function_for_item="",
).end_if_()

REQUEST = {"common": {"a": 1, "b": -1}, "items": []}
