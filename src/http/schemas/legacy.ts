// Owns the JSON schemas of the v1 operations that carry their credentials in the body (upstream notes 0, 1.2, 4).
import { idString, object } from './common.js';

/** `apiKey` + `authToken` in `data`, as every body-credential operation takes them. */
export const bodyCredentials = { apiKey: idString, authToken: { type: 'string', minLength: 1, maxLength: 512 } } as const;

export const legacyTokenSchema = object(
  {
    ...bodyCredentials,
    userId: idString,
    userProperties: object(
      {
        organizationId: idString,
        name: { type: 'string', maxLength: 1000 },
        email: { type: 'string', maxLength: 320 },
        isAdmin: { type: 'boolean' },
      },
      ['organizationId'],
    ),
  },
  ['apiKey', 'authToken', 'userId', 'userProperties'],
);

const location = object({ id: idString, locationName: { type: 'string', maxLength: 1000 } }, ['id']);

export const updateLocationSchema = object(
  {
    ...bodyCredentials,
    organizationId: idString,
    documentId: idString,
    migrate: object({ oldLocation: location, newLocation: location }, ['oldLocation', 'newLocation']),
    merge: { type: 'boolean' },
  },
  ['apiKey', 'authToken', 'organizationId', 'documentId', 'migrate'],
);

export const deleteLocationDataSchema = object(
  { ...bodyCredentials, organizationId: idString, documentId: idString, location },
  ['apiKey', 'authToken', 'organizationId', 'documentId', 'location'],
);
