package etcdsnapshot

import (
	"context"
	"io"
	"os"

	"go.uber.org/zap"

	"github.com/app-operator/app-operator/internal/backuprun"
	"github.com/app-operator/app-operator/internal/snapshotstore"
	"github.com/app-operator/app-operator/internal/tlssecret"
)

// usage is the command's help.
const usage = `Usage:
  etcd-snapshot save --endpoints=URL,... --to=s3://BUCKET/PATH|DIR/PATH [flags]
  etcd-snapshot restore --from=s3://BUCKET/PATH|PATH --data-dir=DIR --name=NAME --initial-cluster=... --initial-advertise-peer-urls=URL,... [flags]

Run "etcd-snapshot save -h" or "etcd-snapshot restore -h" for the flags.
`

// Main runs the etcd-snapshot command with args (without the program's name),
// printing the result JSON to stdout and messages to stderr, and returns the
// exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	return snapshotstore.Main(args, stdout, stderr, usage, map[string]snapshotstore.Command{"save": runSave, "restore": runRestore})
}

func runSave(args []string, stdout, stderr io.Writer) int {
	var (
		c         snapshotstore.Flags
		endpoints string
		tlsDir    string
		opts      SaveOptions
	)
	fs := c.FlagSet("etcd-snapshot save", stderr)
	fs.StringVar(&endpoints, "endpoints", "", "comma-separated client URLs of the etcd members")
	fs.StringVar(&opts.To, "to", "", "target: s3://BUCKET/PATH or a local path; backups are stored as PATH_c<cluster ID>_v<revision>_<UTC time>")
	fs.IntVar(&opts.MaxBackups, "max-backups", 0, "how many backups of the same PATH to keep, deleting the oldest by time (0 keeps all)")
	fs.StringVar(&tlsDir, "tls-dir", "", "folder of tls.crt, tls.key and ca.crt (a mounted TLS Secret): the client certificate for https endpoints")
	if code, ok := snapshotstore.Parse(fs, args); !ok {
		return code
	}
	opts.Endpoints = snapshotstore.SplitList(endpoints)
	opts.S3 = c.S3
	return snapshotstore.Run(c, reporter(stdout, stderr, c), func(ctx context.Context, logger *zap.Logger) (Result, error) {
		opts.Logger = logger
		if tlsDir != "" {
			cfg, err := tlssecret.ClientConfigFromDir(tlsDir, "")
			if err != nil {
				return Result{}, failure(ReasonInvalidArgument, "--tls-dir: %w", err)
			}
			opts.TLS = cfg
		}
		return Save(ctx, opts)
	})
}

func runRestore(args []string, stdout, stderr io.Writer) int {
	var (
		c        snapshotstore.Flags
		peerURLs string
		opts     RestoreOptions
	)
	fs := c.FlagSet("etcd-snapshot restore", stderr)
	fs.StringVar(&opts.From, "from", "", "backup: s3://BUCKET/PATH or a local path, exact or a prefix (under it, the highest revision of the cluster that wrote the latest backup)")
	fs.StringVar(&opts.DataDir, "data-dir", "", "the member's data dir; nothing is done when it already holds a member")
	fs.StringVar(&opts.Name, "name", "", "the member's name")
	fs.StringVar(&opts.InitialCluster, "initial-cluster", "", "initial cluster configuration: NAME=PEER_URL,...")
	fs.StringVar(&opts.InitialClusterToken, "initial-cluster-token", "etcd-cluster", "initial cluster token of the new cluster")
	fs.StringVar(&peerURLs, "initial-advertise-peer-urls", "", "comma-separated peer URLs of the member")
	var onlyPod string
	fs.StringVar(&onlyPod, "only-pod", "", "restore only in the pod of this name (the POD_NAME environment variable); in any other, do nothing")
	if code, ok := snapshotstore.Parse(fs, args); !ok {
		return code
	}
	if onlyPod != "" && os.Getenv("POD_NAME") != onlyPod {
		return reporter(stdout, stderr, c).Report(Result{Report: backuprun.Report{Skipped: true}}, nil)
	}
	opts.InitialAdvertisePeerURLs = snapshotstore.SplitList(peerURLs)
	opts.S3 = c.S3
	return snapshotstore.Run(c, reporter(stdout, stderr, c), func(ctx context.Context, logger *zap.Logger) (Result, error) {
		opts.Logger = logger
		return Restore(ctx, opts)
	})
}

// reporter reports the tool's results to stdout and c's result file.
func reporter(stdout, stderr io.Writer, c snapshotstore.Flags) snapshotstore.Reporter {
	return snapshotstore.Reporter{Tool: "etcd-snapshot", Stdout: stdout, Stderr: stderr, ResultFile: c.ResultFile}
}
