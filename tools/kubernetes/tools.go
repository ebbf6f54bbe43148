//go:build tools

// Package tools pins the control plane the node-marking test runs against:
// kube-apiserver from the Kubernetes release and etcd at the version that
// release is built and tested with, both built from source with go build,
// so the test talks to the real API server, RBAC and admission chain.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
