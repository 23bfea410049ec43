from apple import Flow

flow = Flow(name="if_else", common_input=["tier"], common_output=["salt"])
flow.if_("{{tier}} == 'vip'").transform_by_lua(
    common_input=["tier"],
    common_output=["salt"],
    lua_script="function f() return 'gold' end",
    function_for_common="f",
    function_for_item="",
).else_().transform_by_lua(
    common_output=["salt"],
    lua_script="function g() return 'plain' end",
    function_for_common="g",
    function_for_item="",
).end_if_()

REQUEST = {"common": {"tier": "vip"}, "items": []}
