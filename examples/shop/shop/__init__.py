"""The shop example's handlers (named `shop.tools:<function>` in its manifests)."""
