// Tests issue 10 item 6: ids and keys named like Object.prototype members are ordinary data on every operation taking them.
import t from 'tap';
import { startTestServer } from '../helpers/server.js';

const NAMES = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__'];

/** `{[name]: value}` as an own property, whatever the name (an object literal `{__proto__: x}` would set the prototype). */
function own(name: string, value: unknown): Record<string, unknown> {
  return Object.fromEntries([[name, value]]) as Record<string, unknown>;
}

t.test('dangerous names as ids and keys', async (t) => {
  const { api } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const data = async <T>(path: string, body: unknown): Promise<T> => {
    const response = await api.call<T>(credentials, path, body);
    t.equal(response.status, 200, `${path} ${JSON.stringify(body).slice(0, 120)}`);
    return response.body.result?.data as T;
  };
  const isOwn = (value: unknown, key: string): boolean => typeof value === 'object' && value !== null && Object.hasOwn(value, key);

  for (const name of NAMES) {
    const organizationId = `org-${name}`;
    const scope = { organizationId, documentId: name };

    const orgs = await data<Record<string, { success: boolean }>>('/v2/organizations/add', { organizations: [{ organizationId: name }] });
    t.ok(isOwn(orgs, name) && orgs[name]?.success === true, `organizations/add reports ${name}`);
    const listed = await data<Array<{ id: string }>>('/v2/organizations/get', { organizationIds: [name] });
    t.same(listed.map((row) => row.id), [name], `organizations/get finds ${name}`);

    const docs = await data<Record<string, { success: boolean }>>('/v2/organizations/documents/add', { organizationId, documents: [{ documentId: name }], createOrganization: true });
    t.ok(isOwn(docs, name) && docs[name]?.success === true, `documents/add reports ${name}`);
    const users = await data<Record<string, { success: boolean }>>('/v2/users/add', { organizationId, users: [{ userId: name }] });
    t.ok(isOwn(users, name) && users[name]?.success === true, `users/add reports ${name}`);
    const groups = await data<Record<string, { success: boolean }>>('/v2/organizations/usergroups/add', { organizationId, organizationUserGroups: [{ groupId: name, groupName: name }] });
    t.ok(isOwn(groups, name), `usergroups/add reports ${name}`);

    await data('/v2/auth/permissions/add', { user: { userId: name }, permissions: { resources: [{ type: 'document', id: name, organizationId, accessRole: 'viewer' }] } });
    const permissions = await data<Record<string, { documents?: Record<string, { accessRole?: string }> }>>('/v2/auth/permissions/get', { organizationId, userIds: [name], documentIds: [name] });
    t.ok(isOwn(permissions, name) && isOwn(permissions[name]?.documents, name), `permissions/get reports ${name} under ${name}`);
    t.equal(permissions[name]?.documents?.[name]?.accessRole, 'viewer');

    const added = await data<Record<string, { success: boolean }>>('/v2/commentannotations/add', {
      ...scope,
      commentAnnotations: [{ annotationId: name, commentData: [{ commentText: 'x', from: { userId: name } }] }],
    });
    t.same(Object.keys(added), [name], `annotation add reports under ${name}`);
    t.equal(added[name]?.success, true);
    const got = await data<Array<{ annotationId: string }>>('/v2/commentannotations/get', { ...scope, annotationIds: [name] });
    t.same(got.map((row) => row.annotationId), [name]);
    const grouped = await data<Record<string, unknown[]>>('/v2/commentannotations/get', { organizationId, documentIds: [name], groupByDocumentId: true });
    t.ok(isOwn(grouped, name) && grouped[name]?.length === 1, `groupByDocumentId groups under ${name}`);
    const counts = await data<Record<string, { total: number }>>('/v2/commentannotations/count/get', { organizationId, documentIds: [name], userId: 'someone' });
    t.ok(isOwn(counts, name) && counts[name]?.total === 1, `count reports ${name}`);

    await data('/v2/presence/add', { ...scope, users: [{ userId: name }] });
    const presence = await data<Array<{ userId: string }>>('/v2/presence/get', scope);
    t.same(presence.map((row) => row.userId), [name], `presence keeps ${name}`);

    await data('/v2/crdt/add', { ...scope, editorId: name, type: 'map', data: own(name, { nested: own(name, 1) }) });
    const crdt = await data<Array<{ id: string; data: Record<string, unknown> }>>('/v2/crdt/get', { ...scope, editorId: name });
    t.equal(crdt[0]?.id, name);
    t.ok(isOwn(crdt[0]?.data, name), `a CRDT map key ${name} is read back`);

    const notFound = await data<Record<string, { success: boolean }>>('/v2/notifications/delete', { organizationId, notificationIds: [name] });
    t.ok(isOwn(notFound, name) && notFound[name]?.success === false, `notifications/delete reports ${name}, not found`);
    const prefs = await data<Record<string, { success: boolean }>>('/v2/notifications/config/set', { organizationId, userIds: [name], config: { inbox: 'ALL' } });
    t.ok(isOwn(prefs, name) && prefs[name]?.success === true, `notifications/config/set reports ${name}`);
    const noActivity = await data<Record<string, { success: boolean }>>('/v2/activities/delete', { organizationId, activityIds: [name] });
    t.ok(isOwn(noActivity, name) && noActivity[name]?.success === false, `activities/delete reports ${name}, not found`);

    const deleted = await data<Record<string, { success: boolean }>>('/v2/commentannotations/delete', { ...scope, annotationIds: [name] });
    t.ok(isOwn(deleted, name) && deleted[name]?.success === true, `annotation delete reports ${name}`);
    t.same(await data('/v2/commentannotations/get', { ...scope }), [], 'and it is gone');
  }
});
