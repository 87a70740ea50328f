// Owns the JSON schemas of the comment annotation and comment operations (spec 2.4-2.7, 4.7, 4.10; upstream notes 2.16-2.17).
import { arrayOf, freeObject, idString, object, pageToken } from './common.js';

const text = { type: 'string', maxLength: 100_000 } as const;
const shortText = { type: 'string', maxLength: 2048 } as const;
/** Milliseconds since the epoch, up to the largest a Date holds (8.64e15): later ones are not dates. */
const millis = { type: 'number', minimum: 0, maximum: 8.64e15 } as const;
const anyObject = freeObject;
const ids = (items: object = idString): object => arrayOf(items, { min: 1, max: 30 });
const commentId = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER } as const;

export const userRef = object({ userId: idString, name: shortText, email: shortText }, ['userId']);
const nullable = (schema: object): object => ({ ...schema, type: ['object', 'null'] });

export const statusSchema = object(
  {
    id: idString,
    name: shortText,
    type: { enum: ['default', 'ongoing', 'terminal'] },
    color: shortText,
    lightColor: shortText,
    svg: text,
    iconUrl: shortText,
  },
  ['id', 'name', 'type', 'color', 'lightColor'],
);

export const prioritySchema = object({ id: idString, name: shortText, color: shortText, lightColor: shortText }, ['id', 'name', 'color', 'lightColor']);

const locationSchema = object({ id: idString, locationName: shortText }, ['id']);

const targetElementSchema = object(
  { elementId: shortText, targetText: text, occurrence: { type: 'integer', minimum: 0 }, selectAllContent: { type: 'boolean' } },
  [],
  false,
);

const taggedUserContact = object(
  { text: shortText, userId: idString, contact: object({ email: shortText, name: shortText, userId: idString }, ['email', 'name', 'userId']) },
  ['text', 'userId', 'contact'],
);

const suggestionSchema = object({ status: { enum: ['pending', 'accepted', 'rejected'] } });

const commentFields = {
  commentText: text,
  commentHtml: text,
  context: anyObject,
  taggedUserContacts: arrayOf(taggedUserContact, { max: 1000 }),
  attachments: arrayOf(anyObject, { max: 100 }),
  isCommentResolverUsed: { type: 'boolean' },
  isCommentTextAvailable: { type: 'boolean' },
};

export const commentInput = object({ ...commentFields, commentId, from: userRef, createdAt: millis, lastUpdated: millis }, ['from']);

const commentData = arrayOf(commentInput, { min: 1, max: 1000 });

export const annotationInput = object(
  {
    annotationId: idString,
    location: locationSchema,
    targetElement: targetElementSchema,
    commentData,
    status: statusSchema,
    priority: prioritySchema,
    assignedTo: userRef,
    context: anyObject,
    createdAt: millis,
    lastUpdated: millis,
    type: { enum: ['comment', 'suggestion'] },
    suggestion: suggestionSchema,
  },
  ['commentData'],
);

const documentScope = { organizationId: idString, documentId: idString };

export const addAnnotationsSchema = object(
  { ...documentScope, commentAnnotations: arrayOf(annotationInput, { min: 1, max: 1000 }) },
  ['organizationId', 'documentId', 'commentAnnotations'],
);

export const getAnnotationsSchema = object(
  {
    organizationId: idString,
    documentId: idString,
    documentIds: ids(),
    folderId: idString,
    groupByDocumentId: { type: 'boolean' },
    locationIds: ids(),
    annotationIds: ids(),
    userIds: ids(),
    mentionedUserIds: ids(),
    resolvedBy: idString,
    statusIds: ids(),
    order: { enum: ['asc', 'desc'] },
    updatedAfter: millis,
    updatedBefore: millis,
    createdAfter: millis,
    createdBefore: millis,
    pageSize: { type: 'integer', minimum: 1, maximum: 1000 },
    pageToken,
  },
  ['organizationId'],
);

const selector = { annotationIds: ids(), locationIds: ids(), userIds: ids() };

export const updateAnnotationsSchema = object(
  {
    ...documentScope,
    ...selector,
    updatedData: {
      ...object(
        {
          location: locationSchema,
          targetElement: targetElementSchema,
          from: userRef,
          status: statusSchema,
          statusUpdatedByUserId: { ...idString, type: ['string', 'null'] },
          resolvedByUserId: { ...idString, type: ['string', 'null'] },
          assignedTo: nullable(userRef),
          context: anyObject,
          priority: nullable(prioritySchema),
          suggestion: suggestionSchema,
        },
        [],
        false,
      ),
      minProperties: 1,
    },
    updateUsers: arrayOf(object({ oldUser: userRef, newUser: userRef }, ['oldUser', 'newUser']), { min: 1, max: 100 }),
  },
  ['organizationId', 'documentId'],
);

export const deleteAnnotationsSchema = object({ ...documentScope, ...selector }, ['organizationId', 'documentId']);

export const countAnnotationsSchema = object(
  { organizationId: idString, documentIds: ids(), userId: idString, statusIds: ids() },
  ['organizationId', 'documentIds', 'userId'],
);

const threadScope = { ...documentScope, annotationId: idString };
const threadRequired = ['organizationId', 'documentId', 'annotationId'];

export const addCommentsSchema = object({ ...threadScope, commentData }, [...threadRequired, 'commentData']);

export const getCommentsSchema = object({ ...threadScope, userIds: ids(), commentIds: arrayOf(commentId, { min: 1, max: 1000 }) }, threadRequired);

export const updateCommentsSchema = object(
  {
    ...threadScope,
    commentIds: arrayOf(commentId, { min: 1, max: 1000 }),
    updatedData: object({ ...commentFields, from: userRef }, ['from'], false),
  },
  [...threadRequired, 'commentIds', 'updatedData'],
);

export const deleteCommentsSchema = object({ ...threadScope, commentIds: arrayOf(commentId, { min: 1, max: 1000 }) }, threadRequired);
