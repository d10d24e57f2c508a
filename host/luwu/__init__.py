"""LuWu on the host side: shard plan, worker, optimizer node, out-of-core Adam, ModelInNetwork."""
