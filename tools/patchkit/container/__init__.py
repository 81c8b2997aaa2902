"""The patched container image: build context, builders (docker/podman/buildah), push."""
