package promserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"
	apiv1 "github.com/prometheus/prometheus/web/api/v1"
)

// ruleLoader loads rule groups from files, or from bytes given by name.
type ruleLoader struct {
	sources map[string][]byte
	order   []string
	parser  parser.Parser
	logger  *slog.Logger
}

func newRuleLoader(srcs []RuleSource, logger *slog.Logger) *ruleLoader {
	l := &ruleLoader{sources: map[string][]byte{}, parser: parser.NewParser(parser.Options{}), logger: logger}
	for _, s := range srcs {
		l.sources[s.Name] = s.YAML
		l.order = append(l.order, s.Name)
	}
	return l
}

// Load implements rules.GroupLoader.
func (l *ruleLoader) Load(id string, ignoreUnknownFields bool, scheme model.ValidationScheme) (*rulefmt.RuleGroups, []error) {
	b, ok := l.sources[id]
	if !ok {
		return rulefmt.ParseFile(id, ignoreUnknownFields, scheme, l.parser, l.logger)
	}
	rgs, errs := rulefmt.Parse(b, ignoreUnknownFields, scheme, l.parser, l.logger)
	for i := range errs {
		errs[i] = fmt.Errorf("%s: %w", id, errs[i])
	}
	return rgs, errs
}

// Parse implements rules.GroupLoader.
func (l *ruleLoader) Parse(query string) (parser.Expr, error) { return l.parser.ParseExpr(query) }

// validate loads every rule file and source once, so that a bad rule is a
// clear error from Start (the rule manager would only log it); it returns the
// identifiers to give the rule manager.
func (l *ruleLoader) validate(files []string) ([]string, error) {
	ids := append(append([]string(nil), files...), l.order...)
	var errs []error
	for _, id := range ids {
		rgs, lerrs := l.Load(id, false, model.UTF8Validation)
		errs = append(errs, lerrs...)
		if len(lerrs) > 0 {
			continue
		}
		for _, g := range rgs.Groups {
			for _, r := range g.Rules {
				if _, err := l.Parse(r.Expr); err != nil {
					errs = append(errs, fmt.Errorf("%s: group %q: %w", id, g.Name, err))
				}
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	return ids, nil
}

// startRules evaluates the rule files into the TSDB.
func (s *Server) startRules(ctx context.Context, loader *ruleLoader, ids []string) error {
	m := rules.NewManager(&rules.ManagerOptions{
		AppendableV2:    s.db,
		Queryable:       s.db,
		QueryFunc:       rules.EngineQueryFunc(s.engine, s.db),
		NotifyFunc:      func(context.Context, string, ...*rules.Alert) {}, // no Alertmanager
		Context:         ctx,
		Logger:          s.log.With("component", "rule manager"),
		Registerer:      s.reg,
		OutageTolerance: time.Hour,
		ForGracePeriod:  10 * time.Minute,
		ResendDelay:     time.Minute,
		GroupLoader:     loader,
	})
	if err := m.Update(s.opts.EvaluationInterval, ids, labels.EmptyLabels(), s.url, nil); err != nil {
		m.Stop()
		return fmt.Errorf("embedded prometheus: loading rules: %w", err)
	}
	s.rules = m
	s.rulesDone = make(chan struct{})
	go func() {
		defer close(s.rulesDone)
		m.Run()
	}()
	return nil
}

// ruleGroups is the rule manager, or no rules without one.
func (s *Server) ruleGroups() apiv1.RulesRetriever {
	if s.rules != nil {
		return s.rules
	}
	return noRules{}
}

type noRules struct{}

func (noRules) RuleGroups() []*rules.Group           { return nil }
func (noRules) AlertingRules() []*rules.AlertingRule { return nil }
