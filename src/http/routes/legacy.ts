// Owns the v1 operations that carry credentials in the body: the legacy token mint (upstream 4) and locations (upstream 1.6).
import type { UserTokens } from '../../auth/user-tokens.js';
import type { CollabDocuments } from '../../doc/collab-state.js';
import type { Location } from '../../doc/annotations/model.js';
import type { ApiKeyIdentity, Workspaces } from '../../tenant/workspaces.js';
import { ok, operation, type Operation } from '../operation.js';
import { deleteLocationDataSchema, legacyTokenSchema, updateLocationSchema } from '../schemas/legacy.js';

interface BodyCredentials {
  apiKey: string;
  authToken: string;
}

interface LegacyTokenInput extends BodyCredentials {
  userId: string;
  userProperties: { organizationId: string; name?: string; email?: string; isAdmin?: boolean };
}

/** The same credential check as the x-svc-* headers, with the same answers (PERMISSION_DENIED naming what is wrong). */
export function bodyIdentity(workspaces: Pick<Workspaces, 'authenticateApiKey'>, input: BodyCredentials): ApiKeyIdentity {
  return workspaces.authenticateApiKey(input.apiKey, input.authToken);
}

interface LocationScope extends BodyCredentials {
  organizationId: string;
  documentId: string;
}

export function legacyOperations(workspaces: Workspaces, userTokens: UserTokens, collab: CollabDocuments): Operation[] {
  return [
    operation<LegacyTokenInput, 'public'>({
      paths: ['/v1/auth/token/get'],
      // The credentials are in the body: the route wrapper reads no headers, the handler checks them.
      auth: 'public',
      // Backends mint a token per user sign-in; the per-address limit of signup would throttle them.
      rateLimited: false,
      schema: legacyTokenSchema,
      handle: async (input) => {
        const identity = bodyIdentity(workspaces, input);
        const { organizationId, ...properties } = input.userProperties;
        // A v1 token names the user's organization: it is a member grant there (access-model rows 7 and 8),
        // which opens public and organizationPrivate documents but not restricted ones.
        const token = await userTokens.sign({
          userId: input.userId,
          apiKey: identity.apiKey,
          userProperties: { ...properties, organizationId },
          resources: [{ type: 'organization', id: organizationId, accessRole: 'editor' }],
        });
        return ok('Token generated successfully.', { token });
      },
    }),
      operation<LocationScope & { migrate: { oldLocation: Location; newLocation: Location }; merge?: boolean }, 'public'>({
      paths: ['/v1/organizations/documents/locations/update'],
      auth: 'public',
      rateLimited: false,
      schema: updateLocationSchema,
      handle: async (input) => {
        const { apiKey } = bodyIdentity(workspaces, input);
        const { oldLocation, newLocation } = input.migrate;
        // merge: the new fields over the old location's (as the caller describes it); otherwise the new one as given.
        const location: Location = input.merge === true ? { ...oldLocation, ...newLocation } : newLocation;
        await collab.annotations({ apiKey, organizationId: input.organizationId, documentId: input.documentId }, (state) =>
          state.update({ locationIds: [oldLocation.id] }, { location }, undefined),
        );
        return ok('Location updated.', null);
      },
    }),
    operation<LocationScope & { location: Location }, 'public'>({
      paths: ['/v1/organizations/documents/locations/data/delete'],
      auth: 'public',
      rateLimited: false,
      schema: deleteLocationDataSchema,
      handle: async (input) => {
        const { apiKey } = bodyIdentity(workspaces, input);
        await collab.annotations({ apiKey, organizationId: input.organizationId, documentId: input.documentId }, (state) =>
          state.remove({ locationIds: [input.location.id] }),
        );
        return ok('Location data deleted.', null);
      },
    }),
  ];
}
