// Package preview prints the children the operator would apply for custom
// resources read from YAML, without a cluster. The builders are pure, so
// what it prints is what the operator applies (apart from the owner's uid,
// which only the cluster assigns).
package preview

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/api/podsecurity"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/resources"
)

// Main runs `app-operator preview -f FILE`; it returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("preview", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "-", "YAML file of one or more custom resources; - reads standard input")
	profile := fs.String("default-security-profile", string(podsecurity.Baseline), "the operator's --default-security-profile to preview with")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: app-operator preview -f FILE\n\nPrints, as YAML, the children the operator would apply for each resource in FILE.\nA resource without a namespace is previewed in namespace default.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	in := stdin
	if *file != "-" {
		f, err := os.Open(*file)
		if err != nil {
			fmt.Fprintln(stderr, "Error:", err)
			return 1
		}
		defer f.Close()
		in = f
	}
	opts := controller.Options{Defaults: resources.Defaults{SecurityProfile: podsecurity.Profile(*profile)}}
	if err := Render(stdout, in, opts); err != nil {
		fmt.Fprintln(stderr, "Error:", err)
		return 1
	}
	return 0
}

// Render reads YAML documents of custom resources from in and writes the
// children of each to out, as a YAML stream.
func Render(out io.Writer, in io.Reader, opts controller.Options) error {
	decoder := serializer.NewCodecFactory(controller.NewScheme(), serializer.EnableStrict).UniversalDeserializer()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(in))
	first := true
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			return fmt.Errorf("decode resource: %w", err)
		}
		// As kubectl would, in a context without a namespace.
		if m, ok := obj.(metav1.Object); ok && m.GetNamespace() == "" {
			m.SetNamespace(metav1.NamespaceDefault)
		}
		children, err := controller.Build(obj, opts)
		if f, ok := errors.AsType[*conditions.Failure](err); ok {
			// The operator would apply nothing and say why in the
			// status: so does the preview, and goes on to the next.
			if err := refused(out, obj, f, &first); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if err := write(out, children, &first); err != nil {
			return err
		}
	}
}

// refused writes, as a YAML comment, that nothing is applied for obj and
// the condition the operator would set.
func refused(out io.Writer, obj runtime.Object, f *conditions.Failure, first *bool) error {
	m, _ := obj.(metav1.Object)
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if !*first {
		if _, err := io.WriteString(out, "---\n"); err != nil {
			return err
		}
	}
	*first = false
	_, err := fmt.Fprintf(out, "# %s %s/%s: nothing is applied; the status says Ready=False %s: %s\n", kind, m.GetNamespace(), m.GetName(), f.Reason, f.Message)
	return err
}

func write(out io.Writer, children []runtime.ApplyConfiguration, first *bool) error {
	for _, c := range children {
		data, err := yaml.Marshal(c)
		if err != nil {
			return err
		}
		if !*first {
			if _, err := io.WriteString(out, "---\n"); err != nil {
				return err
			}
		}
		*first = false
		if _, err := out.Write(data); err != nil {
			return err
		}
	}
	return nil
}
