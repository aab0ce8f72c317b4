package snapshotstore

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

	"github.com/app-operator/app-operator/api/conditions"
)

// DefaultResultFile is where a run writes its result when --result-file is
// not given: the container's termination message.
const DefaultResultFile = "/dev/termination-log"

// Command is one command of a tool, such as save: it runs with the
// arguments after its name and returns the exit code.
type Command func(args []string, stdout, stderr io.Writer) int

// Main runs the command of commands that args[0] names, printing usage for
// help, and returns the exit code: 2 for no or an unknown command.
func Main(args []string, stdout, stderr io.Writer, usage string, commands map[string]Command) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	if run, ok := commands[args[0]]; ok {
		return run(args[1:], stdout, stderr)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "unknown command %q\n%s", args[0], usage)
	return 2
}

// Flags are the flags every command of a backup tool has: how to reach
// S3, the time limit, where the result goes and the log level.
type Flags struct {
	S3         S3Options
	Timeout    time.Duration
	ResultFile string
	LogLevel   string
}

// FlagSet is the flag set of the command name, with c's flags, that
// prints its messages to stderr.
func (c *Flags) FlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.register(fs)
	return fs
}

func (c *Flags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.S3.Endpoint, "s3-endpoint", "", "URL of the S3 service (http:// or https://); empty means AWS")
	fs.BoolVar(&c.S3.ForcePathStyle, "s3-force-path-style", false, "address buckets as ENDPOINT/BUCKET rather than BUCKET.ENDPOINT")
	fs.StringVar(&c.S3.Region, "s3-region", "", "region of the bucket; empty lets the client find it")
	fs.StringVar(&c.S3.CredentialsFile, "aws-credentials-file", "", "AWS shared credentials file (profile default); empty: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	fs.StringVar(&c.S3.CredentialsSecret, "aws-secret", "", "the Secret the credentials come from, named when they are missing")
	fs.DurationVar(&c.Timeout, "timeout", 30*time.Minute, "time limit of the whole run")
	fs.StringVar(&c.ResultFile, "result-file", DefaultResultFile, "file the result JSON is also written to (ignored when it cannot be written)")
	fs.StringVar(&c.LogLevel, "log-level", "warn", "level of the messages on stderr: debug, info, warn or error")
}

// Parse parses args into fs and returns the exit code to end with when
// they cannot be run: 0 after -h, 2 after a bad flag.
func Parse(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	return 0, true
}

// Reporter prints a tool's result as one JSON object to stdout and to the
// result file.
type Reporter struct {
	// Tool is the tool's name, the prefix of its messages on stderr.
	Tool           string
	Stdout, Stderr io.Writer
	ResultFile     string
}

// Run runs do with the logger of c's level and c's time limit, and
// reports what it returns with rep.
func Run[R any](c Flags, rep Reporter, do func(context.Context, *zap.Logger) (R, error)) int {
	logger, err := newLogger(c.LogLevel, rep.Stderr)
	if err != nil {
		var none R
		return rep.Report(none, Failure(conditions.ReasonInvalidArgument, "%w", err))
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
	defer cancel()
	res, err := do(ctx, logger)
	return rep.Report(res, err)
}

// failed is the result of a failure, as every tool's result type spells
// its last two fields.
type failed struct {
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Report prints res (or, when err is not nil, the failure) and returns the
// exit code.
func (rep Reporter) Report(res any, err error) int {
	v := res
	code := 0
	if err != nil {
		reason := ReasonOf(err)
		v = failed{Error: err.Error(), Reason: string(reason)}
		code = ExitCode(reason)
		fmt.Fprintln(rep.Stderr, rep.Tool+":", err)
	}
	b, _ := json.Marshal(v)
	fmt.Fprintln(rep.Stdout, string(b))
	writeResultFile(rep.ResultFile, v)
	return code
}

// writeResultFile writes v as JSON to path, ignoring a path that cannot be
// written (such as /dev/termination-log outside a pod).
func writeResultFile(path string, v any) {
	if path == "" {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	_ = os.WriteFile(path, append(b, '\n'), 0o644)
}

// SplitList splits a comma-separated list, dropping empty items.
func SplitList(s string) []string {
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
