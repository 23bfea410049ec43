from apple import Flow

flow = Flow(name="lua_common", common_input=["age"], common_output=["bucket", "label"])
flow.transform_by_lua(
    common_input=["age"],
    common_output=["bucket"],
    lua_script="function bucket_of() return math.floor(age / 10) end",
    function_for_common="bucket_of",
    function_for_item="",
)
flow.transform_by_lua(
    common_input=["bucket"],
    common_output=["label"],
    lua_script='function label_of() return "b" .. tostring(bucket) end',
    function_for_common="label_of",
    function_for_item="",
)

REQUEST = {"common": {"age": 37}, "items": []}
