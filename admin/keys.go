package admin

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// KeySecretPrefix starts every virtual key secret.
const KeySecretPrefix = "tg-"

// DefaultRotationGrace is how long the old secret of a rotated key stays valid
// when the request gives no grace period.
const DefaultRotationGrace = 24 * time.Hour

// keyView is what the API shows of a stored key at time now.
func keyView(k *store.Key, now time.Time) *adminv1.Key {
	out := &adminv1.Key{
		Id: k.ID, Alias: k.Alias, Prefix: k.Prefix, UserId: k.UserID, TeamId: k.TeamID, OrgId: k.OrgID,
		Limits: limitsOut(k.Limits), Metadata: maps.Clone(k.Metadata),
		CreatedAt: tsOut(k.CreatedAt), RevokedAt: tsOut(k.RevokedAt), Status: keyStatus(k, now),
		Passthrough: slices.Clone(k.Passthrough), Tags: maps.Clone(k.Tags),
	}
	for _, h := range k.Hashes {
		if !h.ValidUntil.IsZero() && h.ValidUntil.After(now) {
			if out.PreviousSecretValidUntil == nil || h.ValidUntil.After(out.GetPreviousSecretValidUntil().AsTime()) {
				out.PreviousSecretValidUntil = tsOut(h.ValidUntil)
			}
		}
	}
	return out
}

func keyStatus(k *store.Key, now time.Time) adminv1.KeyStatus {
	switch {
	case k.Revoked:
		return adminv1.KeyStatus_KEY_STATUS_REVOKED
	case !k.Limits.ExpiresAt.IsZero() && !now.Before(k.Limits.ExpiresAt):
		return adminv1.KeyStatus_KEY_STATUS_EXPIRED
	default:
		return adminv1.KeyStatus_KEY_STATUS_ACTIVE
	}
}

// newKeySecret returns a fresh secret and its stored form.
func newKeySecret() (string, store.KeyHash, string) {
	sec := secret.New(KeySecretPrefix)
	return sec, store.KeyHash{Hash: secret.Hash(sec)}, sec[:len(KeySecretPrefix)+4]
}

// newID returns a random id with a prefix, e.g. "key-3fZ…".
func newID(prefix string) string { return prefix + secret.New("")[:16] }

// checkTeamCeiling enforces that a team admin never gives a key more than its
// team's own limits.
func (s *Server) checkTeamCeiling(ctx context.Context, teamID string, l kernel.Limits) error {
	if teamGuard(ctx) == "" {
		return nil
	}
	team, _, err := get[store.Team](ctx, s.st, teamID)
	if err != nil {
		return err
	}
	return withinLimits(l, team.Limits, "team")
}

// CreateKey creates a key and returns its secret, once.
func (s *Server) CreateKey(ctx context.Context, req *adminv1.CreateKeyRequest) (*adminv1.CreateKeyResponse, error) {
	resp, err := s.createKey(ctx, req)
	return resp, s.toStatus(ctx, err)
}

func (s *Server) createKey(ctx context.Context, req *adminv1.CreateKeyRequest) (*adminv1.CreateKeyResponse, error) {
	teamID := req.GetTeamId()
	if g := teamGuard(ctx); g != "" && teamID == "" {
		teamID = g
	}
	if err := denyOtherTeam(ctx, teamID); err != nil {
		return nil, err
	}
	limits, err := limitsIn("limits", req.GetLimits())
	if err != nil {
		return nil, err
	}
	if err := s.checkTeamCeiling(ctx, teamID, limits); err != nil {
		return nil, err
	}
	team, err := s.checkRefs(ctx, req.GetUserId(), teamID, req.GetOrgId())
	if err != nil {
		return nil, err
	}
	id := req.GetId()
	if id == "" {
		id = newID("key-")
	}
	sec, hash, prefix := newKeySecret()
	k := store.Key{
		ID: id, Alias: req.GetAlias(), Prefix: prefix, Hashes: []store.KeyHash{hash},
		UserID: req.GetUserId(), TeamID: teamID, OrgID: req.GetOrgId(), Limits: limits,
		Metadata: maps.Clone(req.GetMetadata()), CreatedAt: s.now().UTC(),
		Passthrough: slices.Clone(req.GetPassthrough()),
	}
	if err := passthroughGrantsIn(k.Passthrough); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	if k.Tags, err = keyTags("tags", maps.Clone(req.GetTags())); err != nil { // tags.go
		return nil, s.toStatus(ctx, err)
	}
	if k.OrgID == "" {
		k.OrgID = team.OrgID
	}
	if err := create(ctx, s.st, id, &k); err != nil {
		return nil, err
	}
	if err := s.record(ctx, "key.create", store.KindKey, id, keyAudit(&k)); err != nil {
		return nil, err
	}
	return &adminv1.CreateKeyResponse{Key: keyView(&k, s.now()), Secret: sec}, nil
}

// keyAudit is what the audit log keeps of a key: never its hashes.
func keyAudit(k *store.Key) any {
	return map[string]any{
		"alias": k.Alias, "user_id": k.UserID, "team_id": k.TeamID, "org_id": k.OrgID,
		"limits": k.Limits, "metadata": k.Metadata, "revoked": k.Revoked, "passthrough": k.Passthrough, "tags": k.Tags,
	}
}

// checkRefs fails when a referenced user, team or org does not exist; it
// returns the team (zero without teamID).
func (s *Server) checkRefs(ctx context.Context, userID, teamID, orgID string) (store.Team, error) {
	var team store.Team
	if userID != "" {
		if _, _, err := get[store.User](ctx, s.st, userID); err != nil {
			return team, err
		}
	}
	if teamID != "" {
		var err error
		if team, _, err = get[store.Team](ctx, s.st, teamID); err != nil {
			return team, err
		}
	}
	if orgID != "" {
		if _, _, err := get[store.Org](ctx, s.st, orgID); err != nil {
			return team, err
		}
	}
	return team, nil
}

// getOwnKey reads a key the caller may see.
func (s *Server) getOwnKey(ctx context.Context, id string) (store.Key, int64, error) {
	k, ver, err := get[store.Key](ctx, s.st, id)
	if err != nil {
		return k, 0, err
	}
	if err := denyOtherTeam(ctx, k.TeamID); err != nil {
		return k, 0, err
	}
	return k, ver, nil
}

// GetKey returns one key.
func (s *Server) GetKey(ctx context.Context, req *adminv1.GetKeyRequest) (*adminv1.GetKeyResponse, error) {
	k, _, err := s.getOwnKey(ctx, req.GetId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.GetKeyResponse{Key: keyView(&k, s.now())}, nil
}

// ListKeys lists keys matching the filters, one page at a time.
func (s *Server) ListKeys(ctx context.Context, req *adminv1.ListKeysRequest) (*adminv1.ListKeysResponse, error) {
	team := req.GetTeamId()
	if g := teamGuard(ctx); g != "" {
		if team != "" && team != g {
			return nil, s.toStatus(ctx, denyOtherTeam(ctx, team))
		}
		team = g
	}
	now := s.now()
	keys, next, err := listPage(ctx, s.st, req.GetPageToken(), req.GetPageSize(), func(k *store.Key) bool {
		return (team == "" || k.TeamID == team) && (req.GetUserId() == "" || k.UserID == req.GetUserId()) &&
			(req.GetAlias() == "" || k.Alias == req.GetAlias()) &&
			(req.GetStatus() == adminv1.KeyStatus_KEY_STATUS_UNSPECIFIED || keyStatus(k, now) == req.GetStatus())
	})
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out := &adminv1.ListKeysResponse{NextPageToken: next}
	for i := range keys {
		out.Keys = append(out.Keys, keyView(&keys[i], now))
	}
	return out, nil
}

// UpdateKey changes the fields named by the update mask.
func (s *Server) UpdateKey(ctx context.Context, req *adminv1.UpdateKeyRequest) (*adminv1.UpdateKeyResponse, error) {
	paths := req.GetUpdateMask().GetPaths()
	limits, err := limitsIn("limits", req.GetLimits())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	k, err := update(ctx, s.st, req.GetId(), func(k *store.Key) error {
		if err := denyOtherTeam(ctx, k.TeamID); err != nil {
			return err
		}
		if hasPath(paths, "alias") {
			k.Alias = req.GetAlias()
		}
		if hasPath(paths, "metadata") {
			k.Metadata = maps.Clone(req.GetMetadata())
		}
		if hasPath(paths, "passthrough") {
			if err := passthroughGrantsIn(req.GetPassthrough()); err != nil {
				return err
			}
			k.Passthrough = slices.Clone(req.GetPassthrough())
		}
		if hasPath(paths, "tags") {
			tags, err := keyTags("tags", maps.Clone(req.GetTags())) // tags.go
			if err != nil {
				return err
			}
			k.Tags = tags
		}
		applyLimitsMask(&k.Limits, limits, limitsPaths(paths))
		return s.checkTeamCeiling(ctx, k.TeamID, k.Limits)
	})
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	if err := s.record(ctx, "key.update", store.KindKey, k.ID, map[string]any{"fields": paths, "key": keyAudit(&k)}); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.UpdateKeyResponse{Key: keyView(&k, s.now())}, nil
}

// RevokeKey revokes a key: every secret of it stops working.
func (s *Server) RevokeKey(ctx context.Context, req *adminv1.RevokeKeyRequest) (*adminv1.RevokeKeyResponse, error) {
	now := s.now().UTC()
	k, err := update(ctx, s.st, req.GetId(), func(k *store.Key) error {
		if err := denyOtherTeam(ctx, k.TeamID); err != nil {
			return err
		}
		if !k.Revoked {
			k.Revoked, k.RevokedAt = true, now
		}
		return nil
	})
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	if err := s.record(ctx, "key.revoke", store.KindKey, k.ID, nil); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.RevokeKeyResponse{Key: keyView(&k, now)}, nil
}

// RotateKey gives a key a new secret; the previous one stays valid for the
// grace period (default 24h), older ones that expired are dropped.
func (s *Server) RotateKey(ctx context.Context, req *adminv1.RotateKeyRequest) (*adminv1.RotateKeyResponse, error) {
	grace := DefaultRotationGrace
	if req.GetGracePeriod() != nil {
		grace = req.GetGracePeriod().AsDuration()
	}
	now := s.now().UTC()
	var sec string
	k, err := update(ctx, s.st, req.GetId(), func(k *store.Key) error {
		if err := denyOtherTeam(ctx, k.TeamID); err != nil {
			return err
		}
		if k.Revoked {
			return errorf(ErrInvalid, "key %q is revoked: create a new key instead", k.ID)
		}
		var hash store.KeyHash
		sec, hash, k.Prefix = newKeySecret()
		kept := []store.KeyHash{hash}
		for _, h := range k.Hashes {
			switch {
			case h.ValidUntil.IsZero() && grace > 0:
				kept = append(kept, store.KeyHash{Hash: h.Hash, ValidUntil: now.Add(grace)})
			case !h.ValidUntil.IsZero() && h.ValidUntil.After(now):
				kept = append(kept, h)
			}
		}
		k.Hashes = kept
		return nil
	})
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	if err := s.record(ctx, "key.rotate", store.KindKey, k.ID, map[string]string{"grace_period": grace.String()}); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.RotateKeyResponse{Key: keyView(&k, now), Secret: sec}, nil
}

// passthroughGrantsIn checks pass-through grants (store.ParsePassthroughGrant).
func passthroughGrantsIn(grants []string) error {
	for _, g := range grants {
		if _, _, err := store.ParsePassthroughGrant(g); err != nil {
			return errorf(ErrInvalid, "passthrough: %v", err)
		}
	}
	return nil
}
