package etcdsnapshot

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/app-operator/app-operator/internal/resources/etcdbackup"
)

// DefaultResultFile is where a run writes its result when --result-file is
// not given: the container's termination message.
const DefaultResultFile = "/dev/termination-log"

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
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "save":
		return runSave(args[1:], stdout, stderr)
	case "restore":
		return runRestore(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "unknown command %q\n%s", args[0], usage)
	return 2
}

// commonFlags are the flags of both commands.
type commonFlags struct {
	s3         S3Options
	timeout    time.Duration
	resultFile string
	logLevel   string
}

func (c *commonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.s3.Endpoint, "s3-endpoint", "", "URL of the S3 service (http:// or https://); empty means AWS")
	fs.BoolVar(&c.s3.ForcePathStyle, "s3-force-path-style", false, "address buckets as ENDPOINT/BUCKET rather than BUCKET.ENDPOINT")
	fs.StringVar(&c.s3.Region, "s3-region", "", "region of the bucket; empty lets the client find it")
	fs.StringVar(&c.s3.CredentialsFile, "aws-credentials-file", "", "AWS shared credentials file (profile default); empty: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	fs.StringVar(&c.s3.CredentialsSecret, "aws-secret", "", "the Secret the credentials file is mounted from, named when the file is missing")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Minute, "time limit of the whole run")
	fs.StringVar(&c.resultFile, "result-file", DefaultResultFile, "file the result JSON is also written to (ignored when it cannot be written)")
	fs.StringVar(&c.logLevel, "log-level", "warn", "level of the messages on stderr: debug, info, warn or error")
}

func runSave(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("etcd-snapshot save", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		c         commonFlags
		endpoints string
		opts      SaveOptions
	)
	c.register(fs)
	fs.StringVar(&endpoints, "endpoints", "", "comma-separated client URLs of the etcd members")
	fs.StringVar(&opts.To, "to", "", "target: s3://BUCKET/PATH or a local path; backups are stored as PATH_v<revision>_<UTC time>")
	fs.IntVar(&opts.MaxBackups, "max-backups", 0, "how many backups of the same PATH to keep (0 keeps all)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	opts.Endpoints = splitList(endpoints)
	opts.S3 = c.s3
	// TLS to the members: opts.TLS gets the client certificates here once
	// the flags for them exist.
	return c.run(stdout, stderr, func(ctx context.Context, logger *zap.Logger) (Result, error) {
		opts.Logger = logger
		return Save(ctx, opts)
	})
}

func runRestore(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("etcd-snapshot restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		c        commonFlags
		peerURLs string
		opts     RestoreOptions
	)
	c.register(fs)
	fs.StringVar(&opts.From, "from", "", "backup: s3://BUCKET/PATH or a local path, exact or a prefix (the backup with the highest revision under it)")
	fs.StringVar(&opts.DataDir, "data-dir", "", "the member's data dir; nothing is done when it already holds a member")
	fs.StringVar(&opts.Name, "name", "", "the member's name")
	fs.StringVar(&opts.InitialCluster, "initial-cluster", "", "initial cluster configuration: NAME=PEER_URL,...")
	fs.StringVar(&opts.InitialClusterToken, "initial-cluster-token", "etcd-cluster", "initial cluster token of the new cluster")
	fs.StringVar(&peerURLs, "initial-advertise-peer-urls", "", "comma-separated peer URLs of the member")
	var onlyPod string
	fs.StringVar(&onlyPod, "only-pod", "", "restore only in the pod of this name (the POD_NAME environment variable); in any other, do nothing")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if onlyPod != "" && os.Getenv("POD_NAME") != onlyPod {
		return report(stdout, stderr, c.resultFile, Result{Skipped: true}, nil)
	}
	opts.InitialAdvertisePeerURLs = splitList(peerURLs)
	opts.S3 = c.s3
	return c.run(stdout, stderr, func(ctx context.Context, logger *zap.Logger) (Result, error) {
		opts.Logger = logger
		return Restore(ctx, opts)
	})
}

// run runs do with the logger of c's level and c's time limit, and
// reports what it returns.
func (c *commonFlags) run(stdout, stderr io.Writer, do func(context.Context, *zap.Logger) (Result, error)) int {
	logger, err := newLogger(c.logLevel, stderr)
	if err != nil {
		return report(stdout, stderr, c.resultFile, Result{}, failure(ReasonInvalidArgument, "%w", err))
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	res, err := do(ctx, logger)
	return report(stdout, stderr, c.resultFile, res, err)
}

// report prints the result (or the failure) as one JSON object to stdout and
// to the result file, and returns the exit code.
func report(stdout, stderr io.Writer, resultFile string, res Result, err error) int {
	var v any = res
	code := 0
	if err != nil {
		reason := ReasonOf(err)
		v = Result{Error: err.Error(), Reason: string(reason)}
		code = exitCode(reason)
		fmt.Fprintln(stderr, "etcd-snapshot:", err)
	}
	b, _ := json.Marshal(v)
	fmt.Fprintln(stdout, string(b))
	writeResultFile(resultFile, v)
	return code
}

// exitCode is the exit code of a failure for reason: ExitPermanent when
// trying again cannot help (the Job that runs the tool then fails at
// once), 1 otherwise.
func exitCode(reason Reason) int {
	switch reason {
	case ReasonAccessDenied, ReasonBucketNotFound, ReasonInvalidArgument, ReasonCorrupt, ReasonNotFound, ReasonCredentialsMissing:
		return etcdbackup.ExitPermanent
	}
	return 1
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// newLogger logs to w at level.
func newLogger(level string, w io.Writer) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("the log level %q is not debug, info, warn or error", level)
	}
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(w), lvl)), nil
}
