"""The control plane's domain: the control item model, its DynamoDB typed-JSON codec and the run plan."""
