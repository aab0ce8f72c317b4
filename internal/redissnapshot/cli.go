package redissnapshot

import (
	"context"
	"fmt"
	"io"
	"os"

	"go.uber.org/zap"

	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/backuprun"
	"github.com/app-operator/app-operator/internal/resources/redisbackup"
	"github.com/app-operator/app-operator/internal/snapshotstore"
	"github.com/app-operator/app-operator/internal/tlssecret"
)

// usage is the command's help.
const usage = `Usage:
  redis-snapshot save --addrs=HOST:PORT,... --to=s3://BUCKET/PATH|DIR/PATH [flags]
  redis-snapshot restore --from=s3://BUCKET/PATH|PATH --data-dir=DIR [--only-pod=NAME] [flags]
  redis-snapshot lineage --data-dir=DIR
  redis-snapshot auth --to=FILE --user=NAME

The nodes' password and user come from REDIS_PASSWORD and REDIS_USERNAME,
the S3 keys from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
Run "redis-snapshot save -h" or "redis-snapshot restore -h" for the flags.
`

// Main runs the redis-snapshot command with args (without the program's
// name), printing the result JSON to stdout and messages to stderr, and
// returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	return snapshotstore.Main(args, stdout, stderr, usage, map[string]snapshotstore.Command{"save": runSave, "restore": runRestore, "lineage": runLineage, "auth": runAuth})
}

func runSave(args []string, stdout, stderr io.Writer) int {
	var (
		c          snapshotstore.Flags
		addrs      string
		tlsDir     string
		serverName string
		opts       SaveOptions
	)
	fs := c.FlagSet("redis-snapshot save", stderr)
	fs.StringVar(&addrs, "addrs", "", "comma-separated addresses of the Redis nodes, HOST:PORT")
	fs.StringVar(&opts.To, "to", "", "target: s3://BUCKET/PATH or a local path; backups are stored as PATH_<UTC time>_o<offset>.rdb")
	fs.IntVar(&opts.MaxBackups, "max-backups", 0, "how many backups of the same PATH to keep (0 keeps all)")
	fs.StringVar(&tlsDir, "tls-dir", "", "folder of tls.crt, tls.key and ca.crt (a mounted TLS Secret): connect with TLS, presenting that certificate")
	fs.StringVar(&serverName, "tls-server-name", "", "the name the nodes' certificate is checked against; empty: the host of each address")
	if code, ok := snapshotstore.Parse(fs, args); !ok {
		return code
	}
	opts.Addrs = snapshotstore.SplitList(addrs)
	opts.S3 = c.S3
	opts.Credentials = Credentials{Username: os.Getenv(redisbackup.UsernameEnv), Password: os.Getenv(redisbackup.PasswordEnv)}
	return snapshotstore.Run(c, reporter(stdout, stderr, c), func(ctx context.Context, logger *zap.Logger) (Result, error) {
		opts.Logger = logger
		if tlsDir != "" {
			cfg, err := tlssecret.ClientConfigFromDir(tlsDir, serverName)
			if err != nil {
				return Result{}, snapshotstore.Failure(conditions.ReasonInvalidArgument, "--tls-dir: %w", err)
			}
			opts.Credentials.TLS = cfg
		}
		return Save(ctx, opts)
	})
}

func runRestore(args []string, stdout, stderr io.Writer) int {
	var (
		c       snapshotstore.Flags
		opts    RestoreOptions
		onlyPod string
	)
	fs := c.FlagSet("redis-snapshot restore", stderr)
	fs.StringVar(&opts.From, "from", "", "backup: s3://BUCKET/PATH or a local path, exact or a prefix (the newest backup under it)")
	fs.StringVar(&opts.DataDir, "data-dir", "", "the node's data dir; nothing is done when it already holds Redis data")
	fs.StringVar(&onlyPod, "only-pod", "", "restore only in the pod of this name (the POD_NAME environment variable); in any other, do nothing")
	if code, ok := snapshotstore.Parse(fs, args); !ok {
		return code
	}
	if (onlyPod != "" && os.Getenv(redisbackup.PodNameEnv) != onlyPod) || os.Getenv(redisbackup.RestoredEnv) == "true" {
		return reporter(stdout, stderr, c).Report(Result{Report: backuprun.Report{Skipped: true}}, nil)
	}
	opts.S3 = c.S3
	return snapshotstore.Run(c, reporter(stdout, stderr, c), func(ctx context.Context, _ *zap.Logger) (Result, error) {
		return Restore(ctx, opts)
	})
}

// runLineage reports how far a node's data folder got (ReadLineage). It
// always succeeds: a position it cannot read is reported as not known.
func runLineage(args []string, stdout, stderr io.Writer) int {
	var (
		c   snapshotstore.Flags
		dir string
	)
	fs := c.FlagSet("redis-snapshot lineage", stderr)
	fs.StringVar(&dir, "data-dir", "", "the node's data dir")
	if code, ok := snapshotstore.Parse(fs, args); !ok {
		return code
	}
	return reporter(stdout, stderr, c).Report(ReadLineage(dir), nil)
}

// runAuth writes the node's password, from REDIS_PASSWORD, as redis.conf
// settings to the file a node includes.
func runAuth(args []string, stdout, stderr io.Writer) int {
	var (
		c        snapshotstore.Flags
		to, user string
	)
	fs := c.FlagSet("redis-snapshot auth", stderr)
	fs.StringVar(&to, "to", "", "the file to write (on a volume of the pod's memory)")
	fs.StringVar(&user, "user", "", "the named user the password is set for, beside the default user")
	if code, ok := snapshotstore.Parse(fs, args); !ok {
		return code
	}
	if to == "" || user == "" {
		fmt.Fprintln(stderr, "redis-snapshot auth: --to and --user are required")
		return 2
	}
	if err := WriteAuth(to, user, os.Getenv(redisbackup.PasswordEnv)); err != nil {
		fmt.Fprintln(stderr, "redis-snapshot auth:", err)
		return 1
	}
	return 0
}

// reporter reports the tool's results to stdout and c's result file.
func reporter(stdout, stderr io.Writer, c snapshotstore.Flags) snapshotstore.Reporter {
	return snapshotstore.Reporter{Tool: "redis-snapshot", Stdout: stdout, Stderr: stderr, ResultFile: c.ResultFile}
}
