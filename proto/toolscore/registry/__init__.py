"""Generated protobuf and gRPC code for the expectation registry API; see `v1/registry.proto`."""
