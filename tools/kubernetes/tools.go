//go:build tools

// Package tools pins the Kubernetes the deploy tests run against:
// kube-apiserver, kube-controller-manager, kube-scheduler and the kubelet
// from the Kubernetes release and etcd at the version that release is built
// and tested with, all built from source with go build, so the tests talk
// to the real API server, RBAC and admission chain and run the agent's
// DaemonSet on a real kubelet.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
