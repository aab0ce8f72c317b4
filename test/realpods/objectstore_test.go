package realpods

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/signer"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/test/cluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// The cluster's S3 object store (hack/objectstore) takes the cluster's
// credentials, and only them, keeps what is put byte for byte, refuses a
// bucket name S3 refuses, and answers pods as well as the host.

// objectStore is the cluster's store; the test fails without one.
func objectStore(t *testing.T) cluster.ObjectStore {
	t.Helper()
	needCluster(t)
	store, ok := testCluster.ObjectStore()
	if !ok {
		t.Fatal("the cluster has no object store (cluster.Options.ObjectStore)")
	}
	return store
}

// s3Client is a client of the store with the secret key secret, by path
// (the store has no virtual-host addressing), through transport (nil:
// the default one).
func s3Client(t *testing.T, store cluster.ObjectStore, secret string, transport http.RoundTripper) *minio.Client {
	t.Helper()
	u, err := url.Parse(store.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	c, err := minio.New(u.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(store.AccessKey, secret, ""),
		Secure:       u.Scheme == "https",
		Region:       "us-east-1",
		BucketLookup: minio.BucketLookupPath,
		Transport:    transport,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newBucket creates a bucket of a new name.
func newBucket(t *testing.T, c *minio.Client) string {
	t.Helper()
	bucket := "test-" + randomHex(t, 6)
	if err := c.MakeBucket(context.Background(), bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("create bucket %s: %v", bucket, err)
	}
	return bucket
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// putAndGetBack puts size random bytes under key and reads them back.
func putAndGetBack(t *testing.T, c *minio.Client, bucket, key string, size int) {
	t.Helper()
	ctx := context.Background()
	data := make([]byte, size)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{ContentType: "application/octet-stream"}); err != nil {
		t.Fatalf("put %s/%s: %v", bucket, key, err)
	}
	obj, err := c.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatalf("get %s/%s: %v", bucket, key, err)
	}
	defer obj.Close()
	got, err := io.ReadAll(obj)
	if err != nil {
		t.Fatalf("read %s/%s: %v", bucket, key, err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("%s/%s: read %d bytes (sha256 %x), put %d (sha256 %x)", bucket, key, len(got), sha256.Sum256(got), len(data), sha256.Sum256(data))
	}
}

func TestObjectStorePutsAndGetsBack(t *testing.T) {
	store := objectStore(t)
	t.Parallel()
	if !strings.HasPrefix(store.Endpoint, "http://") || store.AccessKey == "" || store.SecretKey == "" {
		t.Fatalf("object store %+v: want an http:// endpoint and both keys", store)
	}
	c := s3Client(t, store, store.SecretKey, nil)
	bucket := newBucket(t, c)
	// A small object, and one of several megabytes.
	putAndGetBack(t, c, bucket, "small/object", 1000)
	putAndGetBack(t, c, bucket, "backups/snapshot.db", 9<<20+7)

	buckets, err := c.ListBuckets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, b := range buckets {
		found = found || b.Name == bucket
	}
	if !found {
		t.Errorf("ListBuckets: %v, want %s among them", buckets, bucket)
	}
	logStoreMemory(t)
}

func TestObjectStoreRefusesAWrongSecretKey(t *testing.T) {
	store := objectStore(t)
	t.Parallel()
	good := s3Client(t, store, store.SecretKey, nil)
	bucket := newBucket(t, good)
	bad := s3Client(t, store, store.SecretKey+"x", nil)
	ctx := context.Background()

	_, err := bad.ListBuckets(ctx)
	wantRefused(t, "ListBuckets", err)
	_, err = bad.PutObject(ctx, bucket, "refused", strings.NewReader("data"), 4, minio.PutObjectOptions{})
	wantRefused(t, "PutObject", err)
	if _, err := good.StatObject(ctx, bucket, "refused", minio.StatObjectOptions{}); minio.ToErrorResponse(err).Code != minio.NoSuchKey {
		t.Errorf("the object of the refused put: %v, want %s", err, minio.NoSuchKey)
	}
}

// wantRefused fails unless err is S3's refusal of a bad signature.
func wantRefused(t *testing.T, what string, err error) {
	t.Helper()
	resp := minio.ToErrorResponse(err)
	if err == nil || resp.StatusCode != http.StatusForbidden || (resp.Code != "SignatureDoesNotMatch" && resp.Code != "AccessDenied") {
		t.Errorf("%s with a wrong secret key: %v (status %d, code %q), want 403 SignatureDoesNotMatch or AccessDenied", what, err, resp.StatusCode, resp.Code)
	}
}

func TestObjectStoreRefusesABadBucketName(t *testing.T) {
	store := objectStore(t)
	t.Parallel()
	const name = "Bad_Name"
	// The client refuses it before sending anything...
	c := s3Client(t, store, store.SecretKey, nil)
	if err := c.MakeBucket(context.Background(), name, minio.MakeBucketOptions{}); err == nil {
		t.Errorf("the client created the bucket %s", name)
	}
	// ...and so does the store, sent a well-signed CreateBucket.
	req, err := http.NewRequest(http.MethodPut, store.Endpoint+"/"+name, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sha256.New().Sum(nil)))
	req = signer.SignV4(*req, store.AccessKey, store.SecretKey, "", "us-east-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(body, []byte("<Code>InvalidBucketName</Code>")) {
		t.Errorf("CreateBucket %s: %s: %s, want 400 InvalidBucketName", name, resp.Status, body)
	}
}

// nginxProxyConf makes nginx a plain proxy to the store, Host header and
// all, so that a request signed for the store passes through it.
const nginxProxyConf = `user nginx;
worker_processes 1;
error_log /dev/stderr notice;
pid /run/nginx.pid;

events {
    worker_connections 64;
}

http {
    access_log /dev/stdout;
    server {
        listen 80;
        client_max_body_size 0;
        location / {
            proxy_pass %s;
            proxy_set_header Host $http_host;
            proxy_request_buffering off;
        }
    }
}
`

// A pod reaches the store: the images of the local registry have no HTTP
// client, so an nginx pod proxies to the store, and the host's requests,
// signed for the store, go through the pod.
func TestObjectStoreAnswersPods(t *testing.T) {
	store := objectStore(t)
	t.Parallel()
	ctx := context.Background()
	cs := clientset(t)
	ns := testenv.NewNamespace(t, operatorClient(t))

	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "s3-proxy", Namespace: ns},
		Data:       map[string]string{"nginx.conf": fmt.Sprintf(nginxProxyConf, store.Endpoint)},
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "s3-proxy", Namespace: ns, Labels: map[string]string{"app": "s3-proxy"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "nginx", Image: "nginx:1.7.9",
				Command:      []string{"nginx", "-c", "/etc/s3-proxy/nginx.conf", "-g", "daemon off;"},
				Ports:        []corev1.ContainerPort{{ContainerPort: 80}},
				VolumeMounts: []corev1.VolumeMount{{Name: "conf", MountPath: "/etc/s3-proxy"}},
			}},
			Volumes: []corev1.Volume{{Name: "conf", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}},
			}}},
		},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	running := runningPod(t, cs, ns, "app=s3-proxy")
	proxy := net.JoinHostPort(running.Status.PodIP, "80")
	transport := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, proxy)
	}}
	defer transport.CloseIdleConnections()
	c := s3Client(t, store, store.SecretKey, transport)
	// nginx starts listening just after the pod turns Running.
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		_, err := c.ListBuckets(ctx)
		return err == nil, fmt.Sprintf("ListBuckets through the pod %s at %s: %v", running.Name, proxy, err)
	})
	bucket := newBucket(t, c)
	putAndGetBack(t, c, bucket, "through/the/pod", 64<<10)
	t.Logf("the pod %s (node %s) reached the store at %s", running.Name, running.Spec.NodeName, store.Endpoint)
}

// logStoreMemory logs the store's resident memory, now and at its peak.
func logStoreMemory(t *testing.T) {
	t.Helper()
	pid, ok := testCluster.Pids()["objectstore"]
	if !ok {
		return
	}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Log(err)
		return
	}
	var rss, hwm string
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rss = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			hwm = strings.TrimSpace(v)
		}
	}
	t.Logf("the object store (pid %d): RSS %s, peak %s", pid, rss, hwm)
}
