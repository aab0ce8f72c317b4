package bench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// apiRequests counts the requests an API server served, by "VERB
// resource[/subresource]" (its apiserver_request_total, every client).
type apiRequests map[string]float64

// apiRequests reads the API server's request counts from its metrics.
func (e *env) apiRequests(ctx context.Context) (counts apiRequests, err error) {
	hc, err := rest.HTTPClientFor(e.adminCfg)
	if err != nil {
		return nil, err
	}
	err = httpGet(ctx, hc, e.adminCfg.Host+"/metrics", func(r io.Reader) error {
		counts, err = parseAPIRequests(r)
		return err
	})
	return counts, err
}

// parseAPIRequests sums apiserver_request_total, in the text format, by
// verb, resource and subresource.
func parseAPIRequests(r io.Reader) (apiRequests, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	counts := apiRequests{}
	f, ok := families["apiserver_request_total"]
	if !ok {
		return counts, nil
	}
	for _, m := range f.GetMetric() {
		var verb, resource, subresource string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "verb":
				verb = l.GetValue()
			case "resource":
				resource = l.GetValue()
			case "subresource":
				subresource = l.GetValue()
			}
		}
		if subresource != "" {
			resource += "/" + subresource
		}
		counts[verb+" "+resource] += m.GetCounter().GetValue()
	}
	return counts, nil
}

// since returns the requests served since before was read.
func (a apiRequests) since(before apiRequests) apiRequests {
	d := apiRequests{}
	for k, v := range a {
		if n := v - before[k]; n != 0 {
			d[k] = n
		}
	}
	return d
}

// total is the number of requests.
func (a apiRequests) total() float64 {
	var t float64
	for _, v := range a {
		t += v
	}
	return t
}

// requestDifferences describes the largest differences between two runs'
// requests, at most n of them, largest first: "VERB resource a/b".
func requestDifferences(op, bare apiRequests, n int) string {
	keys := slices.Collect(maps.Keys(op))
	for k := range bare {
		if _, ok := op[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		da, db := math.Abs(op[a]-bare[a]), math.Abs(op[b]-bare[b])
		if da != db {
			if da > db {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	top := keys[:min(n, len(keys))]
	parts := make([]string, 0, len(top))
	for _, k := range top {
		parts = append(parts, fmt.Sprintf("%s %.0f/%.0f", k, op[k], bare[k]))
	}
	return strings.Join(parts, ", ")
}
