package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

// The RealPods profile's S3 object store (Options.ObjectStore): one `weed
// server` process of SeaweedFS (master, volume server, filer and S3 gateway)
// on the host, at the address where the host and the pods of every node
// reach it, with S3 authentication on and one identity per cluster.

// WeedEnv names the weed binary (SeaweedFS) the object store runs. `make
// seaweedfs` builds it into bin/ from the version hack/seaweedfs/go.mod
// pins; `make test` sets the variable.
const WeedEnv = "WEED"

// objectStoreDir is the store's folder under the node's: its data and its
// S3 identities. Removed at teardown; its log stays in logs/weed.log.
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
	// dir holds the data and the identities.
	dir string
	// sockets are the Unix sockets weed makes for its own services'
	// gRPC, removed after it exits.
	sockets []string
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

// weedBinary is the weed binary WeedEnv names.
func weedBinary() (string, error) {
	path := os.Getenv(WeedEnv)
	if path == "" {
		return "", fmt.Errorf("the object store needs SeaweedFS: set %s to the weed binary that `make seaweedfs` builds into bin/", WeedEnv)
	}
	if st, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("the object store's weed binary (%s=%s): %w; `make seaweedfs` builds it", WeedEnv, path, err)
	} else if st.IsDir() {
		return "", fmt.Errorf("the object store's weed binary (%s=%s) is a folder", WeedEnv, path)
	}
	return path, nil
}

// s3Identities is weed's -s3.config file.
type s3Identities struct {
	Identities []s3Identity `json:"identities"`
}

type s3Identity struct {
	Name        string         `json:"name"`
	Credentials []s3Credential `json:"credentials"`
	Actions     []string       `json:"actions"`
}

type s3Credential struct {
	AccessKey string `json:"accessKey"`
	SecretKey string `json:"secretKey"`
}

// startObjectStore starts weed with its data under the node's folder,
// listening on n.hostIP; waitObjectStore waits for its S3 API.
func (n *realNode) startObjectStore(weed string) error {
	ports, err := freePorts(8)
	if err != nil {
		return err
	}
	master, volume, filer, s3 := ports[0], ports[1], ports[2], ports[3]
	// Without them weed takes each HTTP port plus 10000 for its gRPC,
	// which may be past 65535.
	masterGRPC, volumeGRPC, filerGRPC, s3GRPC := ports[4], ports[5], ports[6], ports[7]

	s := &objectStore{dir: filepath.Join(n.dir, objectStoreDir)}
	s.Endpoint = "http://" + net.JoinHostPort(n.hostIP, strconv.Itoa(s3))
	s.AccessKey = randomToken()[:20]
	s.SecretKey = randomToken() + randomToken()[:8]
	data := filepath.Join(s.dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return err
	}
	config, err := json.Marshal(s3Identities{Identities: []s3Identity{{
		Name:        "app-operator-tests",
		Credentials: []s3Credential{{AccessKey: s.AccessKey, SecretKey: s.SecretKey}},
		Actions:     []string{"Admin", "Read", "List", "Tagging", "Write"},
	}}})
	if err != nil {
		return err
	}
	configPath := filepath.Join(s.dir, "s3.json")
	if err := os.WriteFile(configPath, config, 0o600); err != nil {
		return err
	}
	for _, svc := range []struct {
		name string
		port int
	}{{"master", masterGRPC}, {"volume", volumeGRPC}, {"filer", filerGRPC}, {"s3", s3GRPC}} {
		s.sockets = append(s.sockets, fmt.Sprintf("/tmp/seaweedfs-%s-grpc-%d.sock", svc.name, svc.port))
	}
	s3Socket := filepath.Join(realNodeState, "weed-s3.sock")
	filerSocket := filepath.Join(realNodeState, "weed-filer.sock")
	s.sockets = append(s.sockets, s3Socket, filerSocket)

	args := []string{"server",
		"-dir=" + data,
		"-ip=" + n.hostIP,
		"-master.port=" + strconv.Itoa(master),
		"-master.port.grpc=" + strconv.Itoa(masterGRPC),
		"-volume.port=" + strconv.Itoa(volume),
		"-volume.port.grpc=" + strconv.Itoa(volumeGRPC),
		"-filer",
		"-filer.port=" + strconv.Itoa(filer),
		"-filer.port.grpc=" + strconv.Itoa(filerGRPC),
		"-filer.localSocket=" + filerSocket,
		"-s3",
		"-s3.port=" + strconv.Itoa(s3),
		"-s3.port.grpc=" + strconv.Itoa(s3GRPC),
		"-s3.localSocket=" + s3Socket,
		"-s3.config=" + configPath,
		// As S3 does: writing to a bucket that does not exist fails.
		"-s3.autoCreateBucket=false",
		// Its Iceberg and Lance catalogs would take fixed ports.
		"-s3.port.iceberg=0",
		"-s3.port.lance=0",
		// Volumes of 64 MB, not preallocated. Every bucket is a
		// collection that grows 7 volumes at its first write: 8 would
		// fill up at the second bucket, so up to 256 (empty ones take
		// no room).
		"-master.volumeSizeLimitMB=64",
		"-volume.max=256",
		"-master.telemetry=false",
		// Stop at once on SIGTERM rather than after 10 s.
		"-volume.preStopSeconds=0",
	}
	s.started = time.Now()
	p, err := startProcess(weed, args, filepath.Join(n.dir, "logs", "weed.log"))
	if err != nil {
		return fmt.Errorf("start weed: %w", err)
	}
	p.name = "weed"
	s.proc = p
	n.procs = append(n.procs, p)
	n.store = s
	return nil
}

// waitObjectStore returns once the store answers a signed ListBuckets,
// and says after how long.
func (n *realNode) waitObjectStore(ctx context.Context, progress io.Writer) error {
	s := n.store
	if err := n.poll(ctx, 2*time.Minute, "object store (weed) at "+s.Endpoint, func() error { return s.listBuckets(ctx) }); err != nil {
		return err
	}
	fmt.Fprintf(progress, "Object store (SeaweedFS S3) answered at %s %.1f s after its start\n", s.Endpoint, time.Since(s.started).Seconds())
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

// stop stops weed and removes its data, identities and sockets. The data
// is thrown away: weed gets 2 s, not the 15 s its filer takes on SIGTERM
// retrying to flush its log to the volume server already stopped.
func (s *objectStore) stop() error {
	errs := []error{s.proc.stop(2 * time.Second)}
	for _, sock := range s.sockets {
		if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, os.RemoveAll(s.dir))
	return errors.Join(errs...)
}
