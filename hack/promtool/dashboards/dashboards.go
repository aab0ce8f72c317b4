// Package dashboards checks the operator's Grafana dashboards
// (config/grafana/*.json): every panel has a title, a data source and
// queries, every query and template variable query parses with
// Prometheus's PromQL parser once the template variables are given sample
// values, and it lists the metrics they name with the labels the queries
// read of each, for the real-pods suite to find in a real scrape
// (config/grafana/metrics.txt).
package dashboards

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
)

// Dashboard is the part of a Grafana dashboard the check reads.
type Dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []Panel `json:"panels"`
	Templating    struct {
		List []Variable `json:"list"`
	} `json:"templating"`
}

// Panel is a dashboard panel; a row holds no queries, or its collapsed
// panels.
type Panel struct {
	ID         int             `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	Datasource *Datasource     `json:"datasource"`
	Targets    []Target        `json:"targets"`
	Panels     []Panel         `json:"panels"`
	GridPos    json.RawMessage `json:"gridPos"`
}

// Datasource is the data source of a panel, query or variable.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Target is a panel's query.
type Target struct {
	RefID        string      `json:"refId"`
	Expr         string      `json:"expr"`
	LegendFormat string      `json:"legendFormat"`
	Datasource   *Datasource `json:"datasource"`
}

// Variable is a template variable: the data source to query, or a
// label_values query of it.
type Variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *Datasource     `json:"datasource"`
}

// datasourceVariable is the name of the template variable every panel's
// data source is: the Prometheus the dashboard is imported with.
const datasourceVariable = "datasource"

// intervals are Grafana's global variables a query may use, with the
// sample value each gets before it is parsed.
var intervals = map[string]string{
	"__rate_interval": "5m",
	"__interval":      "1m",
	"__range":         "6h",
}

// variableRef is a reference to a template variable: $name or ${name},
// with an optional format (${name:regex}).
var variableRef = regexp.MustCompile(`\$(?:\{(\w+)(?::\w+)?\}|(\w+))`)

// labelValues is a variable query of Grafana's Prometheus data source:
// label_values(selector, label).
var labelValues = regexp.MustCompile(`^\s*label_values\(\s*(.+?)\s*,\s*(\w+)\s*\)\s*$`)

// Metric is a metric a dashboard names, and the labels its queries read
// of it: those its selectors match on, those the aggregations and vector
// matchings above it group or match by.
type Metric struct {
	Name   string
	Labels []string
}

// Check reads the dashboard data and returns the metrics its queries and
// variables name, sorted by name, each with its labels sorted; or every
// problem it found.
func Check(data []byte) ([]Metric, error) {
	var d Dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, err
	}
	c := &checker{metrics: map[string]map[string]bool{}, vars: map[string]string{}}
	if d.UID == "" || d.Title == "" {
		c.fail("the dashboard needs a uid and a title")
	}
	if d.SchemaVersion == 0 {
		c.fail("the dashboard has no schemaVersion")
	}
	for k, v := range intervals {
		c.vars[k] = v
	}
	for _, v := range d.Templating.List {
		// The sample value of every variable: a label value, which any
		// matcher takes, = or =~.
		c.vars[v.Name] = "sample"
	}
	if _, ok := c.vars[datasourceVariable]; !ok {
		c.fail("no template variable %q of type datasource", datasourceVariable)
	}
	for _, v := range d.Templating.List {
		c.variable(v)
	}
	if len(d.Panels) == 0 {
		c.fail("the dashboard has no panels")
	}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		c.panel(p, ids)
		for _, inner := range p.Panels {
			c.panel(inner, ids)
		}
	}
	if len(c.problems) > 0 {
		return nil, errors.Join(c.problems...)
	}
	out := make([]Metric, 0, len(c.metrics))
	for name, labels := range c.metrics {
		m := Metric{Name: name}
		for l := range labels {
			m.Labels = append(m.Labels, l)
		}
		slices.Sort(m.Labels)
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Metric) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// checker gathers the problems and the metrics of one dashboard.
type checker struct {
	problems []error
	// metrics are, by name, the labels the queries read.
	metrics map[string]map[string]bool
	// vars are the sample values of the template variables.
	vars map[string]string
}

func (c *checker) fail(format string, args ...any) {
	c.problems = append(c.problems, fmt.Errorf(format, args...))
}

// variable checks a template variable: the data source one is of type
// prometheus; a query one queries it with label_values.
func (c *checker) variable(v Variable) {
	switch v.Type {
	case "datasource":
		var q string
		if err := json.Unmarshal(v.Query, &q); err != nil || q != "prometheus" {
			c.fail("variable %s: a data source variable of type prometheus wanted, got query %s", v.Name, v.Query)
		}
	case "query":
		c.datasource("variable "+v.Name, v.Datasource)
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			if err := json.Unmarshal(v.Query, &q.Query); err != nil {
				c.fail("variable %s: query %s is neither a string nor an object with a query", v.Name, v.Query)
				return
			}
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			c.fail("variable %s: query %q is not label_values(selector, label)", v.Name, q.Query)
			return
		}
		c.expr("variable "+v.Name, m[1], []string{m[2]})
	default:
		c.fail("variable %s: type %q; the dashboards use datasource and query variables", v.Name, v.Type)
	}
}

// panel checks a panel and its queries; a row needs none.
func (c *checker) panel(p Panel, ids map[int]bool) {
	where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
	if p.ID == 0 || ids[p.ID] {
		c.fail("%s: no id, or one another panel has", where)
	}
	ids[p.ID] = true
	if p.Title == "" {
		c.fail("%s: no title", where)
	}
	if len(p.GridPos) == 0 {
		c.fail("%s: no gridPos", where)
	}
	if p.Type == "row" {
		return
	}
	c.datasource(where, p.Datasource)
	if len(p.Targets) == 0 {
		c.fail("%s: no queries", where)
	}
	refs := map[string]bool{}
	for _, t := range p.Targets {
		at := fmt.Sprintf("%s, query %s", where, t.RefID)
		if t.RefID == "" || refs[t.RefID] {
			c.fail("%s: no refId, or one another query of the panel has", at)
		}
		refs[t.RefID] = true
		c.datasource(at, t.Datasource)
		if strings.TrimSpace(t.Expr) == "" {
			c.fail("%s: no expr", at)
			continue
		}
		c.expr(at, t.Expr, legendLabels(t.LegendFormat))
	}
}

// datasource checks that ds is the dashboard's Prometheus data source
// variable.
func (c *checker) datasource(where string, ds *Datasource) {
	if ds == nil || ds.Type != "prometheus" || ds.UID != "${"+datasourceVariable+"}" {
		c.fail("%s: data source %+v, want {type: prometheus, uid: ${%s}}", where, ds, datasourceVariable)
	}
}

// legendLabel is a label a legend shows: {{name}}.
var legendLabel = regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`)

// legendLabels are the labels legend shows.
func legendLabels(legend string) []string {
	var out []string
	for _, m := range legendLabel.FindAllStringSubmatch(legend, -1) {
		out = append(out, m[1])
	}
	return out
}

// expr parses a query once its variables have their sample values, and
// keeps the metrics its selectors name with the labels it reads of each:
// those of its selectors, aggregations and matchings, and shown, those
// its result shows (a legend's, a variable's label_values).
func (c *checker) expr(where, expr string, shown []string) {
	var unknown []string
	substituted := variableRef.ReplaceAllStringFunc(expr, func(ref string) string {
		m := variableRef.FindStringSubmatch(ref)
		name := m[1] + m[2]
		v, ok := c.vars[name]
		if !ok || name == datasourceVariable {
			unknown = append(unknown, ref)
			return ref
		}
		return v
	})
	if len(unknown) > 0 {
		c.fail("%s: %q uses %v, no variable of the dashboard", where, expr, unknown)
		return
	}
	e, err := parser.NewParser(parser.Options{}).ParseExpr(substituted)
	if err != nil {
		c.fail("%s: %q: %v", where, expr, err)
		return
	}
	parser.Inspect(e, func(n parser.Node, path []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		if vs.Name == "" {
			c.fail("%s: %q: the selector %s names no metric", where, expr, vs)
			return nil
		}
		labels := c.metrics[vs.Name]
		if labels == nil {
			labels = map[string]bool{}
			c.metrics[vs.Name] = labels
		}
		for _, l := range shown {
			labels[l] = true
		}
		for _, m := range vs.LabelMatchers {
			if m.Name != "__name__" {
				labels[m.Name] = true
			}
		}
		// What the enclosing aggregations group by (without names labels
		// that need not exist), and the enclosing matchings match on.
		for _, above := range path {
			switch a := above.(type) {
			case *parser.AggregateExpr:
				if !a.Without {
					for _, l := range a.Grouping {
						labels[l] = true
					}
				}
			case *parser.BinaryExpr:
				if a.VectorMatching != nil && a.VectorMatching.On {
					for _, l := range a.VectorMatching.MatchingLabels {
						labels[l] = true
					}
				}
			}
		}
		return nil
	})
}

// List checks the dashboards dir holds (*.json) and returns the metrics
// each names, a line each: the dashboard's file name, the metric and the
// labels its queries read of it, separated by spaces; sorted. That is
// config/grafana/metrics.txt.
func List(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return "", err
	}
	if len(files) == 0 {
		return "", fmt.Errorf("no dashboard (*.json) in %s", dir)
	}
	var b strings.Builder
	var problems []error
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		metrics, err := Check(data)
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: %w", filepath.Base(f), err))
			continue
		}
		for _, m := range metrics {
			fmt.Fprintln(&b, strings.Join(append([]string{filepath.Base(f), m.Name}, m.Labels...), " "))
		}
	}
	return b.String(), errors.Join(problems...)
}
