//! Each memories endpoint as one call: parse the request ([`super::dto`]), call the service,
//! map its result to the answer. The REST handlers and the MCP tools share them (same JSON).

use uuid::Uuid;

use super::dto::{
    CreateMemory, FeedbackInput, ForgetInput, Graph, GraphParams, History, JobView, ListParams,
    MemoryList, MemoryView, Profile, ProfileParams, SaveAnswer, ScopeParams, SearchParams,
    SearchResults, UpdateMemory,
};
use crate::error::Result;
use crate::http::{Success, DONE};
use crate::services::{MemoryService, Principal};

pub async fn create(
    memories: &MemoryService,
    who: &Principal,
    body: CreateMemory,
) -> Result<SaveAnswer> {
    let save = body.parse(memories.tuning().max_content_chars);
    Ok(memories.create(who, save).await?.into())
}

pub async fn search(
    memories: &MemoryService,
    who: &Principal,
    params: SearchParams,
) -> Result<SearchResults> {
    let found = memories
        .search(who, params.workspace_id, params.parse())
        .await?;
    Ok(found.into())
}

pub async fn profile(
    memories: &MemoryService,
    who: &Principal,
    params: ProfileParams,
) -> Result<Profile> {
    let profile = memories
        .profile(who, params.workspace_id, params.parse())
        .await?;
    Ok(profile.into())
}

pub async fn graph(
    memories: &MemoryService,
    who: &Principal,
    params: GraphParams,
) -> Result<Graph> {
    let graph = memories
        .graph(who, params.workspace_id, params.parse())
        .await?;
    Ok(graph.into())
}

pub async fn job(
    memories: &MemoryService,
    who: &Principal,
    id: &str,
    workspace_id: Option<Uuid>,
) -> Result<JobView> {
    Ok(memories.job(who, id, workspace_id).await?.into())
}

pub async fn list(
    memories: &MemoryService,
    who: &Principal,
    params: ListParams,
) -> Result<MemoryList> {
    let page = memories
        .list(who, params.workspace_id, params.parse())
        .await?;
    Ok(page.into())
}

pub async fn get(
    memories: &MemoryService,
    who: &Principal,
    id: &str,
    params: ScopeParams,
) -> Result<MemoryView> {
    let memory = memories
        .get(who, params.workspace_id, params.at(id))
        .await?;
    Ok(MemoryView::from(&memory))
}

pub async fn update(
    memories: &MemoryService,
    who: &Principal,
    id: &str,
    params: ScopeParams,
    body: UpdateMemory,
) -> Result<MemoryView> {
    let edit = body.parse(memories.tuning().max_content_chars);
    let workspace_id = body.workspace_id.or(params.workspace_id);
    let memory = memories
        .update(who, workspace_id, params.at(id), edit)
        .await?;
    Ok(MemoryView::from(&memory))
}

pub async fn delete(
    memories: &MemoryService,
    who: &Principal,
    id: &str,
    params: ScopeParams,
) -> Result<Success> {
    memories
        .delete(who, params.workspace_id, params.at(id))
        .await?;
    Ok(DONE)
}

pub async fn forget(
    memories: &MemoryService,
    who: &Principal,
    id: &str,
    params: ScopeParams,
    body: ForgetInput,
) -> Result<Success> {
    let at = params.at(id);
    memories
        .forget(who, params.workspace_id, at, body.parse())
        .await?;
    Ok(DONE)
}

pub async fn history(
    memories: &MemoryService,
    who: &Principal,
    id: &str,
    params: ScopeParams,
) -> Result<History> {
    let chain = memories
        .history(who, params.workspace_id, params.at(id))
        .await?;
    Ok(chain.into())
}

pub async fn feedback(
    memories: &MemoryService,
    who: &Principal,
    id: &str,
    params: ScopeParams,
    body: FeedbackInput,
) -> Result<Success> {
    let workspace_id = body.workspace_id.or(params.workspace_id);
    let at = params.at(id);
    memories
        .feedback(who, workspace_id, at, body.parse())
        .await?;
    Ok(DONE)
}
