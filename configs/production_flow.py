"""A production-shape flow (compiles to ``configs/production.json``).

Candidates come from a MySQL table (``feed_data``, refreshed every five
minutes, bitmap-indexed by category, ranked by score at load time); a shared
Redis pool (``redis_connection``) serves the user's recently seen items. Secrets stay out
of the file: ``${VAR}`` is read from the environment when the server loads
the config::

    FEED_MYSQL_DSN='user:pass@tcp(db:3306)/feed' REDIS_PASSWORD=... \\
        pineapple serve configs/production.json
"""

from dsl import Flow
from dsl.generated.resources import FeedDataResource, RedisConnectionResource

flow = Flow(
    "feed_production",
    common_input=["user_id", "user_category"],
    item_output=["item_id", "score"],
    common_output=["seen_cache_hit"],
)

flow.resource(
    "feed_data",
    FeedDataResource(
        mysql_dsn="${FEED_MYSQL_DSN}",
        table="${FEED_TABLE:-feed_items}",
        index_columns=["category"],
        order_columns=["score"],
        interval=300,
    ),
)
flow.resource(
    "redis_cache",
    RedisConnectionResource(
        addr="${REDIS_ADDR:-127.0.0.1:6379}",
        password="${REDIS_PASSWORD:-}",
        pool_size=64,
    ),
)

flow.recall_feed_data(
    name="recall_by_category",
    resource_name="feed_data",
    match={"category": "user_category"},
    order_by="score",
    descending=True,
    default_size=200,
    common_input=["user_category"],
    item_output=["item_id", "score"],
)
flow.transform_redis_get(
    name="read_seen",
    resource_name="redis_cache",
    key_prefix="feed:seen:",
    data_type="set",
    common_input=["user_id"],
    common_output=["seen_item_ids", "seen_cache_hit"],
)
flow.filter_truncate(name="top_20", top_n=20)
