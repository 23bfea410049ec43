from apple import Flow, SubFlow

tiers = SubFlow(name="tiers")
tiers.if_("{{tier}} == 1")
tiers.transform_by_lua(
    common_input=["tier"],
    common_output=["discount"],
    lua_script="function f() return 0.5 end",
    function_for_common="f",
    function_for_item="",
)
tiers.elseif_("{{tier}} == 2")
tiers.transform_by_lua(
    common_input=["tier"],
    common_output=["discount"],
    lua_script="function g() return 0.8 end",
    function_for_common="g",
    function_for_item="",
)
tiers.else_()
tiers.transform_by_lua(
    common_output=["discount"],
    lua_script="function h() return 1.0 end",
    function_for_common="h",
    function_for_item="",
)
tiers.end_if_()

flow = Flow(name="branch_in_subflow", common_input=["tier"], common_output=["discount"])
flow.add_subflow(tiers)

REQUEST = {"common": {"tier": 2}, "items": []}
