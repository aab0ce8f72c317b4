// Command nodeimages builds the container images that the real-node profile
// of the local cluster serves from its own registry, without a container
// engine and without an internet registry: stand-ins for the images the
// samples name (nginx, memcached), made of Debian's packages, and the pods'
// sandbox image (pause), made of a Go build. It writes one OCI image layout
// whose index names every image by its full reference
// (org.opencontainers.image.ref.name, e.g. docker.io/library/nginx:1.7.9).
//
//	go run ./hack/nodeimages --debs=DEB_CACHE --pause=PAUSE_BINARY --output=LAYOUT_DIR
//
// Package files come from `apt-get download` into the deb cache and are
// unpacked with `dpkg-deb -x`; docs/real-pods.md says what each image holds.
package main

import (
	"archive/tar"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// RefAnnotation names an image in the layout's index by its full reference.
const RefAnnotation = "org.opencontainers.image.ref.name"

// PauseRef is the sandbox image's reference; the cluster's containerd
// configuration names the same.
const PauseRef = "registry.k8s.io/pause:3.10.2"

// image is one image: the Debian packages it unpacks, the files it adds on
// top, and its run configuration.
type image struct {
	refs       []string
	packages   []string
	files      map[string]file
	entrypoint []string
	cmd        []string
	user       string
	ports      []string
	stopSignal string
}

type file struct {
	mode    os.FileMode
	content string // for a regular file
	link    string // for a symbolic link
	dir     bool
}

// Libraries of glibc that every unpacked binary needs.
var libc = []string{"libc6", "libgcc-s1"}

// baseFiles make an unpacked Debian root usable without Debian's maintainer
// scripts: users, name-service switch, the dynamic loader's cache input.
func baseFiles(passwd, group string) map[string]file {
	return map[string]file{
		"etc/passwd":        {mode: 0o644, content: "root:x:0:0:root:/root:/usr/sbin/nologin\n" + passwd + "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"},
		"etc/group":         {mode: 0o644, content: "root:x:0:\n" + group + "nogroup:x:65534:\n"},
		"etc/nsswitch.conf": {mode: 0o644, content: "passwd: files\ngroup: files\nhosts: files dns\n"},
		"etc/ld.so.conf":    {mode: 0o644, content: "include /etc/ld.so.conf.d/*.conf\n"},
		"tmp":               {dir: true, mode: 0o1777},
		"run":               {dir: true, mode: 0o755},
	}
}

// nginxConf serves /usr/share/nginx/html on port 80 and logs to the
// container's output, as the upstream nginx image does.
const nginxConf = `user nginx;
worker_processes 1;
error_log /dev/stderr notice;
pid /run/nginx.pid;

events {
    worker_connections 1024;
}

http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log /dev/stdout;
    sendfile on;
    keepalive_timeout 65;

    server {
        listen 80;
        listen [::]:80;
        server_name localhost;
        location / {
            root /usr/share/nginx/html;
            index index.html index.htm;
        }
    }
}
`

const nginxIndex = `<!DOCTYPE html>
<html>
<head><title>Welcome to nginx!</title></head>
<body>
<h1>Welcome to nginx!</h1>
<p>Debian's nginx in the app-operator local cluster's stand-in image.</p>
</body>
</html>
`

func images(pauseBinary string) ([]image, error) {
	nginxFiles := baseFiles("nginx:x:101:101:nginx:/nonexistent:/usr/sbin/nologin\n", "nginx:x:101:\n")
	nginxFiles["etc/nginx/nginx.conf"] = file{mode: 0o644, content: nginxConf}
	nginxFiles["usr/share/nginx/html/index.html"] = file{mode: 0o644, content: nginxIndex}
	nginxFiles["var/log/nginx"] = file{dir: true, mode: 0o755}
	nginxFiles["var/log/nginx/access.log"] = file{link: "/dev/stdout"}
	nginxFiles["var/log/nginx/error.log"] = file{link: "/dev/stderr"}
	nginxFiles["var/lib/nginx"] = file{dir: true, mode: 0o755}

	memcachedFiles := baseFiles("memcache:x:11211:11211:memcache:/nonexistent:/usr/sbin/nologin\n", "memcache:x:11211:\n")

	pause, err := os.ReadFile(pauseBinary)
	if err != nil {
		return nil, err
	}
	return []image{
		{
			// The samples' nginx:1.7.9 and nginx (latest): one image under
			// both names.
			refs:       []string{"docker.io/library/nginx:1.7.9", "docker.io/library/nginx:latest"},
			packages:   append([]string{"nginx", "nginx-common", "libcrypt1", "libpcre2-8-0", "libssl3", "zlib1g"}, libc...),
			files:      nginxFiles,
			entrypoint: nil,
			cmd:        []string{"nginx", "-g", "daemon off;"},
			ports:      []string{"80/tcp"},
			stopSignal: "SIGQUIT",
		},
		{
			// The Memcached API's default image. Like the upstream image's
			// entrypoint, arguments that start with '-' go to memcached.
			refs:       []string{"docker.io/library/memcached:1.6.45-alpine"},
			packages:   append([]string{"memcached", "libevent-2.1-7", "libsasl2-2", "libsasl2-modules-db", "libdb5.3", "libssl3"}, libc...),
			files:      memcachedFiles,
			entrypoint: []string{"memcached"},
			user:       "memcache",
			ports:      []string{"11211/tcp"},
		},
		{
			refs:       []string{PauseRef},
			files:      map[string]file{"pause": {mode: 0o555, content: string(pause)}},
			entrypoint: []string{"/pause"},
			user:       "65535:65535",
		},
		redisImage(),
	}, nil
}

func main() {
	debs := flag.String("debs", "", "folder that caches the downloaded Debian packages")
	pause := flag.String("pause", "", "static pause binary")
	output := flag.String("output", "", "OCI image layout folder to write (replaced)")
	flag.Parse()
	if *debs == "" || *pause == "" || *output == "" {
		fmt.Fprintln(os.Stderr, "--debs, --pause and --output are required")
		os.Exit(2)
	}
	if err := build(*debs, *pause, *output); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func build(debs, pause, output string) error {
	imgs, err := withEtcd(images(pause))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(debs, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(output), ".nodeimages-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for i, im := range imgs {
		root := filepath.Join(tmp, fmt.Sprintf("root-%d", i))
		if err := os.MkdirAll(root, 0o755); err != nil {
			return err
		}
		for _, pkg := range im.packages {
			deb, err := download(debs, pkg)
			if err != nil {
				return err
			}
			if out, err := exec.Command("dpkg-deb", "-x", deb, root).CombinedOutput(); err != nil {
				return fmt.Errorf("dpkg-deb -x %s: %v: %s", deb, err, out)
			}
		}
		// Documentation and the packages' own default sites are not needed.
		for _, p := range []string{"usr/share/doc", "usr/share/man", "usr/share/lintian", "usr/share/locale", "usr/share/info",
			"etc/nginx/sites-available", "etc/nginx/sites-enabled", "etc/nginx/modules-enabled", "var/www"} {
			if err := os.RemoveAll(filepath.Join(root, p)); err != nil {
				return err
			}
		}
		if err := writeFiles(root, im.files); err != nil {
			return err
		}
		if len(im.packages) > 0 {
			if out, err := exec.Command("ldconfig", "-r", root).CombinedOutput(); err != nil {
				return fmt.Errorf("ldconfig -r %s: %v: %s", root, err, out)
			}
		}
		img, err := buildImage(root, im)
		if err != nil {
			return fmt.Errorf("image %s: %w", im.refs[0], err)
		}
		for _, ref := range im.refs {
			index = mutate.AppendManifests(index, mutate.IndexAddendum{
				Add: img,
				Descriptor: v1.Descriptor{
					Annotations: map[string]string{RefAnnotation: ref},
					Platform:    &v1.Platform{OS: "linux", Architecture: "amd64"},
				},
			})
		}
		fmt.Println("Built", strings.Join(im.refs, ", "))
	}
	staged := filepath.Join(tmp, "layout")
	if _, err := layout.Write(staged, index); err != nil {
		return err
	}
	if err := os.RemoveAll(output); err != nil {
		return err
	}
	return os.Rename(staged, output)
}

// download returns the cached .deb of pkg, fetching it with apt-get download
// first when the cache has none.
func download(dir, pkg string) (string, error) {
	find := func() string {
		m, _ := filepath.Glob(filepath.Join(dir, pkg+"_*.deb"))
		if len(m) == 0 {
			return ""
		}
		sort.Strings(m)
		return m[len(m)-1]
	}
	if deb := find(); deb != "" {
		return deb, nil
	}
	cmd := exec.Command("apt-get", "download", pkg)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("apt-get download %s: %v: %s (run `apt-get update` once if the package lists are missing)", pkg, err, out)
	}
	if deb := find(); deb != "" {
		return deb, nil
	}
	return "", fmt.Errorf("apt-get download %s left no %s_*.deb in %s", pkg, pkg, dir)
}

func writeFiles(root string, files map[string]file) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	// Parents first.
	sort.Strings(names)
	for _, n := range names {
		f := files[n]
		p := filepath.Join(root, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		_ = os.RemoveAll(p)
		var err error
		switch {
		case f.dir:
			if err = os.Mkdir(p, f.mode.Perm()); err == nil {
				err = os.Chmod(p, f.mode)
			}
		case f.link != "":
			err = os.Symlink(f.link, p)
		default:
			err = os.WriteFile(p, []byte(f.content), f.mode)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func buildImage(root string, im image) (v1.Image, error) {
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return dirLayer(root), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	// A fixed date keeps the digests reproducible.
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cfg.Config.Entrypoint = im.entrypoint
	cfg.Config.Cmd = im.cmd
	cfg.Config.User = im.user
	cfg.Config.WorkingDir = "/"
	cfg.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	cfg.Config.StopSignal = im.stopSignal
	if len(im.ports) > 0 {
		cfg.Config.ExposedPorts = map[string]struct{}{}
		for _, p := range im.ports {
			cfg.Config.ExposedPorts[p] = struct{}{}
		}
	}
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":       im.refs[0],
		"org.opencontainers.image.description": "app-operator local-cluster stand-in; see docs/real-pods.md",
	}
	return mutate.ConfigFile(img, cfg)
}

// dirLayer streams the tree under root as a tar layer owned by root, with
// fixed times.
func dirLayer(root string) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || path == root {
				return err
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			link := ""
			if info.Mode()&fs.ModeSymlink != 0 {
				if link, err = os.Readlink(path); err != nil {
					return err
				}
			}
			hdr, err := tar.FileInfoHeader(info, link)
			if err != nil {
				return err
			}
			hdr.Name = filepath.ToSlash(rel)
			if d.IsDir() {
				hdr.Name += "/"
			}
			hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "root", "root"
			hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = time.Unix(0, 0), time.Time{}, time.Time{}
			hdr.Format = tar.FormatPAX
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			if !info.Mode().IsRegular() {
				return nil
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(tw, f)
			return err
		})
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr
}
