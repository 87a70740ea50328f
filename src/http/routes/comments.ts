// Owns the comment annotation and comment operations, v1 and v2 paths sharing one handler each (spec 4.7, 4.10).
import type { CollabDocuments } from '../../doc/collab-state.js';
import type { CommentUpdate } from '../../doc/annotations/comment-mutations.js';
import { countAnnotations, listAnnotations, type CountInput, type DocumentSource, type ListInput } from '../../doc/annotations/listing.js';
import type { AnnotationInput, CommentInput, Status } from '../../doc/annotations/model.js';
import type { AnnotationUpdate, UserSwap } from '../../doc/annotations/mutations.js';
import type { Selector } from '../../doc/annotations/state.js';
import { invalidArgument } from '../../errors.js';
import { ok, operation, type Operation } from '../operation.js';
import { refOf, type DocumentScope } from './document-scope.js';
import {
  addAnnotationsSchema,
  addCommentsSchema,
  countAnnotationsSchema,
  deleteAnnotationsSchema,
  deleteCommentsSchema,
  getAnnotationsSchema,
  getCommentsSchema,
  updateAnnotationsSchema,
  updateCommentsSchema,
} from '../schemas/comments.js';

interface ThreadScope extends DocumentScope {
  annotationId: string;
}

const both = (path: string): string[] => [`/v1/commentannotations${path}`, `/v2/commentannotations${path}`];

/** Spec 2.6: a status carries its icon as svg or iconUrl; JSON schema cannot name the field, so it is checked here. */
function checkStatus(status: Status | undefined, at: string): void {
  if (status !== undefined && status.svg === undefined && status.iconUrl === undefined) throw invalidArgument(`${at} needs svg or iconUrl`);
}

function selectorOf(input: Selector): Selector {
  return {
    ...(input.annotationIds === undefined ? {} : { annotationIds: input.annotationIds }),
    ...(input.locationIds === undefined ? {} : { locationIds: input.locationIds }),
    ...(input.userIds === undefined ? {} : { userIds: input.userIds }),
  };
}

export function commentOperations(docs: CollabDocuments, source: DocumentSource): Operation[] {
  return [
    operation<DocumentScope & { commentAnnotations: AnnotationInput[] }, 'apiKey'>({
      paths: both('/add'),
      auth: 'apiKey',
      schema: addAnnotationsSchema,
      handle: async (input, ctx) => {
        input.commentAnnotations.forEach((a, i) => checkStatus(a.status, `data.commentAnnotations[${i}].status`));
        const data = await docs.annotations(refOf(ctx.identity, input), (state) => state.add(input.commentAnnotations));
        return ok('Annotations added successfully.', data);
      },
    }),
    operation<ListInput, 'apiKey'>({
      paths: both('/get'),
      auth: 'apiKey',
      schema: getAnnotationsSchema,
      handle: async (input, ctx) => {
        const listing = await listAnnotations(docs, source, ctx.identity.apiKey, input);
        const extra = listing.nextPageToken === undefined ? undefined : { nextPageToken: listing.nextPageToken };
        return ok('Annotations fetched successfully.', listing.data, extra);
      },
    }),
    operation<DocumentScope & Selector & { updatedData?: AnnotationUpdate; updateUsers?: UserSwap[] }, 'apiKey'>({
      paths: both('/update'),
      auth: 'apiKey',
      schema: updateAnnotationsSchema,
      handle: async (input, ctx) => {
        if (input.updatedData === undefined && input.updateUsers === undefined) throw invalidArgument('data.updatedData or data.updateUsers is required');
        checkStatus(input.updatedData?.status, 'data.updatedData.status');
        const data = await docs.annotations(refOf(ctx.identity, input), (state) => state.update(selectorOf(input), input.updatedData, input.updateUsers));
        return ok('Annotations updated successfully', data);
      },
    }),
    operation<DocumentScope & Selector, 'apiKey'>({
      paths: both('/delete'),
      auth: 'apiKey',
      schema: deleteAnnotationsSchema,
      handle: async (input, ctx) => {
        const data = await docs.annotations(refOf(ctx.identity, input), (state) => state.remove(selectorOf(input)));
        return ok('Annotations deleted successfully', data);
      },
    }),
    operation<CountInput, 'apiKey'>({
      paths: both('/count/get'),
      auth: 'apiKey',
      schema: countAnnotationsSchema,
      handle: async (input, ctx) => ok('Annotations count fetched successfully.', await countAnnotations(docs, ctx.identity.apiKey, input)),
    }),
    operation<ThreadScope & { commentData: CommentInput[] }, 'apiKey'>({
      paths: both('/comments/add'),
      auth: 'apiKey',
      schema: addCommentsSchema,
      handle: async (input, ctx) => {
        const data = await docs.annotations(refOf(ctx.identity, input), (state) => state.addComments(input.annotationId, input.commentData));
        return ok('Comment(s) added successfully.', data);
      },
    }),
    operation<ThreadScope & { userIds?: string[]; commentIds?: number[] }, 'apiKey'>({
      paths: both('/comments/get'),
      auth: 'apiKey',
      schema: getCommentsSchema,
      handle: async (input, ctx) => {
        const data = await docs.read(refOf(ctx.identity, input), (doc) => doc.annotations.comments(input.annotationId, input.commentIds, input.userIds));
        return ok('Comments fetched successfully.', data);
      },
    }),
    operation<ThreadScope & { commentIds: number[]; updatedData: CommentUpdate }, 'apiKey'>({
      paths: both('/comments/update'),
      auth: 'apiKey',
      schema: updateCommentsSchema,
      handle: async (input, ctx) => {
        const data = await docs.annotations(refOf(ctx.identity, input), (state) =>
          state.updateComments(input.annotationId, input.commentIds, input.updatedData),
        );
        return ok('Comments updated successfully.', data);
      },
    }),
    operation<ThreadScope & { commentIds?: number[] }, 'apiKey'>({
      paths: both('/comments/delete'),
      auth: 'apiKey',
      schema: deleteCommentsSchema,
      handle: async (input, ctx) => {
        const data = await docs.annotations(refOf(ctx.identity, input), (state) => state.deleteComments(input.annotationId, input.commentIds));
        return ok('Comments deleted successfully.', data);
      },
    }),
  ];
}
