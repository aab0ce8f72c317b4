package cluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func TestRestartAPIServerKeepsThePortAndTheData(t *testing.T) {
	ctx := context.Background()
	c, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
		if !t.Failed() {
			_ = c.RemoveDir()
		}
	}()
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "before-restart"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	done := make(chan error, 1)
	go func() { done <- c.RestartAPIServer(ctx, 2*time.Second) }()
	// The API server must really be gone for a while.
	down := false
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !down; time.Sleep(100 * time.Millisecond) {
		_, err := cs.Discovery().ServerVersion()
		down = err != nil
	}
	if !down {
		t.Fatal("the API server kept answering during the restart")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Same address, same credentials, same etcd.
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "before-restart", metav1.GetOptions{}); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
}
