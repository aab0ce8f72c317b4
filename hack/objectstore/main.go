// Command objectstore is the tests' S3 object store: an S3 API (gofakes3,
// with its in-memory backend) on one address, that accepts requests signed
// (AWS Signature Version 4) by one of the identities of a credentials file
// and refuses every other. Buckets are addressed by path, are not created
// by a first upload, and hold their objects for as long as the process
// runs.
//
// Usage: objectstore --listen=HOST:PORT --credentials=FILE
//
// FILE has one identity per line: an access key and its secret key,
// separated by white space.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rclone/gofakes3"
	"github.com/rclone/gofakes3/s3mem"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9000", "the address to serve the S3 API on")
	credentials := flag.String("credentials", "", "the file of identities: an access key and its secret key on each line")
	flag.Parse()
	keys, err := readCredentials(*credentials)
	if err != nil {
		log.Fatal(err)
	}
	store := gofakes3.New(backend{s3mem.New()}, gofakes3.WithV4Auth(keys), gofakes3.WithLogger(gofakes3.StdLog(log.Default(), gofakes3.LogErr, gofakes3.LogWarn)))
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: store.Server(), ReadHeaderTimeout: 30 * time.Second}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		_ = srv.Close()
	}()
	log.Printf("S3 API on http://%s, %d identities", l.Addr(), len(keys))
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

// readCredentials reads the identities of path: access key, secret key.
func readCredentials(path string) (map[string]string, error) {
	if path == "" {
		return nil, errors.New("--credentials is required: without identities every request would be refused")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	keys := map[string]string{}
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		fields := strings.Fields(s.Text())
		switch len(fields) {
		case 0:
			continue
		case 2:
			keys[fields[0]] = fields[1]
		default:
			return nil, fmt.Errorf("%s:%d: want an access key and a secret key, found %d fields", path, n, len(fields))
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s: no identity", path)
	}
	return keys, nil
}
