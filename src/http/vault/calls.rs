//! Each Context Vault endpoint as one call: parse the request ([`super::dto`]), call the
//! service, map its result to the answer. The REST handlers and the MCP tools share them.

use uuid::Uuid;

use super::dto::{
    BrowseParams, CompanyFactCreated, CreateCompanyFact, CreateDocument, CreateVault,
    DocumentAccepted, DocumentAt, DocumentDeleted, DocumentDetail, DocumentList, DocumentMemories,
    DocumentMemoriesParams, VaultCreated, VaultFeedbackInput, VaultList, VaultMemoryList,
    VaultParams, VaultSearchParams, VaultSearchResults,
};
use crate::error::Result;
use crate::services::vault::{UploadInput, UploadTicket, VaultService};
use crate::services::Principal;

pub async fn list_vaults(
    vault: &VaultService,
    who: &Principal,
    workspace_id: Option<Uuid>,
) -> Result<VaultList> {
    Ok(vault.list_vaults(who, workspace_id).await?.into())
}

pub async fn create_vault(
    vault: &VaultService,
    who: &Principal,
    body: CreateVault,
) -> Result<VaultCreated> {
    Ok(vault
        .create_vault(who, body.workspace_id, body.parse())
        .await?
        .into())
}

pub async fn upload(
    vault: &VaultService,
    who: &Principal,
    ticket: UploadTicket,
    form: UploadInput,
) -> Result<DocumentAccepted> {
    Ok(vault.upload(who, ticket, form).await?.into())
}

pub async fn create_document(
    vault: &VaultService,
    who: &Principal,
    body: CreateDocument,
) -> Result<DocumentAccepted> {
    Ok(vault.create_document(who, body.parse()).await?.into())
}

pub async fn list_documents(
    vault: &VaultService,
    who: &Principal,
    params: VaultParams,
) -> Result<DocumentList> {
    let page = vault.list_documents(who, params.workspace_id, params.vault(), params.page());
    Ok(page.await?.into())
}

pub async fn document(
    vault: &VaultService,
    who: &Principal,
    id: &str,
    at: DocumentAt,
) -> Result<DocumentDetail> {
    Ok(vault
        .document(who, at.workspace_id, at.target(id))
        .await?
        .into())
}

pub async fn delete_document(
    vault: &VaultService,
    who: &Principal,
    id: &str,
    at: DocumentAt,
) -> Result<DocumentDeleted> {
    Ok(vault
        .delete_document(who, at.workspace_id, at.target(id))
        .await?
        .into())
}

pub async fn document_memories(
    vault: &VaultService,
    who: &Principal,
    id: &str,
    params: DocumentMemoriesParams,
) -> Result<DocumentMemories> {
    let (target, vault_id) = (params.target(id), params.vault());
    let cited = vault.document_memories(who, params.workspace_id, target, vault_id);
    Ok(cited.await?.into())
}

pub async fn cancel(
    vault: &VaultService,
    who: &Principal,
    id: &str,
    at: DocumentAt,
) -> Result<DocumentDetail> {
    Ok(vault
        .cancel(who, at.workspace_id, at.target(id))
        .await?
        .into())
}

pub async fn retry(
    vault: &VaultService,
    who: &Principal,
    id: &str,
    at: DocumentAt,
) -> Result<DocumentDetail> {
    Ok(vault
        .retry(who, at.workspace_id, at.target(id))
        .await?
        .into())
}

pub async fn search(
    vault: &VaultService,
    who: &Principal,
    params: VaultSearchParams,
) -> Result<VaultSearchResults> {
    Ok(vault
        .search(who, params.workspace_id, params.parse())
        .await?
        .into())
}

pub async fn browse(
    vault: &VaultService,
    who: &Principal,
    params: BrowseParams,
) -> Result<VaultMemoryList> {
    let page = vault.browse(who, params.workspace_id, params.vault(), params.parse());
    Ok(page.await?.into())
}

/// The fact, and whether it is new (an equal fact is answered as it is).
pub async fn add_fact(
    vault: &VaultService,
    who: &Principal,
    body: CreateCompanyFact,
) -> Result<(CompanyFactCreated, bool)> {
    let (cited, created) = vault.add_fact(who, body.parse()).await?;
    Ok((CompanyFactCreated::from(&cited), created))
}

pub async fn feedback(
    vault: &VaultService,
    who: &Principal,
    id: &str,
    body: VaultFeedbackInput,
) -> Result<()> {
    vault.feedback(who, body.workspace_id, body.parse(id)).await
}
