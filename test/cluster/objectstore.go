package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/minio/minio-go/v7/pkg/signer"
)

// The RealPods profile's S3 object store (Options.ObjectStore): one process
// of hack/objectstore (an S3 API in memory) on the host, at the address
// where the host and the pods of every node reach it, with S3
// authentication on and one identity per cluster.

// ObjectStoreEnv names the object store's binary. `make objectstore`
// builds it into bin/; `make test` sets the variable.
const ObjectStoreEnv = "OBJECTSTORE"

// objectStoreDir is the store's folder under the node's: its identities.
// Removed at teardown; its log stays in logs/objectstore.log.
const objectStoreDir = "objectstore"

// ObjectStore is where the RealPods profile's S3 object store answers and
// the credentials it accepts. Clients address buckets by path
// (Endpoint/bucket/key): the store has no domain name for virtual-host
// addressing (minio-go: BucketLookup: minio.BucketLookupPath; the AWS SDK:
// UsePathStyle). Signatures are AWS Signature Version 4; any region name is
// accepted. Buckets are not created on a first upload: a client creates
// the bucket it writes to.
type ObjectStore struct {
	// Endpoint is the S3 API's URL, http://host:port, with the host's
	// address that the host and pods on every node reach.
	Endpoint string
	// AccessKey and SecretKey are the one identity the store accepts,
	// allowed every action; generated for each cluster.
	AccessKey string
	SecretKey string
}

// objectStore is the running store.
type objectStore struct {
	ObjectStore
	proc *process
	// dir holds the identities.
	dir     string
	started time.Time
}

// ObjectStore returns the S3 object store of a cluster started with
// Options.ObjectStore; false when it has none.
func (c *Cluster) ObjectStore() (ObjectStore, bool) {
	if c.node == nil || c.node.store == nil {
		return ObjectStore{}, false
	}
	return c.node.store.ObjectStore, true
}

// objectStoreBinary is the binary ObjectStoreEnv names.
func objectStoreBinary() (string, error) {
	path := os.Getenv(ObjectStoreEnv)
	if path == "" {
		return "", fmt.Errorf("the object store needs its binary: set %s to the one `make objectstore` builds into bin/", ObjectStoreEnv)
	}
	if st, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("the object store's binary (%s=%s): %w; `make objectstore` builds it", ObjectStoreEnv, path, err)
	} else if st.IsDir() {
		return "", fmt.Errorf("the object store's binary (%s=%s) is a folder", ObjectStoreEnv, path)
	}
	return path, nil
}

// startObjectStore starts the store listening on n.hostIP, with one
// identity; waitObjectStore waits for its S3 API.
func (n *realNode) startObjectStore(binary string) error {
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	addr := net.JoinHostPort(n.hostIP, strconv.Itoa(ports[0]))
	s := &objectStore{dir: filepath.Join(n.dir, objectStoreDir)}
	s.Endpoint = "http://" + addr
	s.AccessKey = randomToken()[:20]
	s.SecretKey = randomToken() + randomToken()[:8]
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	credentials := filepath.Join(s.dir, "credentials")
	if err := os.WriteFile(credentials, []byte(s.AccessKey+" "+s.SecretKey+"\n"), 0o600); err != nil {
		return err
	}
	args := []string{"--listen=" + addr, "--credentials=" + credentials}
	s.started = time.Now()
	p, err := startProcess(binary, args, filepath.Join(n.dir, "logs", "objectstore.log"))
	if err != nil {
		return fmt.Errorf("start the object store: %w", err)
	}
	p.name = "objectstore"
	s.proc = p
	n.procs = append(n.procs, p)
	n.store = s
	return nil
}

// waitObjectStore returns once the store answers a signed ListBuckets,
// and says after how long.
func (n *realNode) waitObjectStore(ctx context.Context, progress io.Writer) error {
	s := n.store
	if err := n.poll(ctx, 2*time.Minute, "object store at "+s.Endpoint, func() error { return s.listBuckets(ctx) }); err != nil {
		return err
	}
	fmt.Fprintf(progress, "Object store (S3) answered at %s %.1f s after its start\n", s.Endpoint, time.Since(s.started).Seconds())
	return nil
}

// listBuckets sends a ListBuckets signed with the store's identity.
func (s *objectStore) listBuckets(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Endpoint+"/", nil)
	if err != nil {
		return err
	}
	// The hash of the empty body, signed with the rest.
	req.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sha256.New().Sum(nil)))
	req = signer.SignV4(*req, s.AccessKey, s.SecretKey, "", "us-east-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ListBuckets: %s: %s", resp.Status, body)
	}
	return nil
}

// stop stops the store, and with it what it held, and removes its
// identities.
func (s *objectStore) stop() error {
	return errors.Join(s.proc.stop(2*time.Second), os.RemoveAll(s.dir))
}
