//! Accounts: sign-up, sign-in, sessions and their cookie, CSRF, workspaces, team, the
//! last-owner rule, invitations and API keys.

use chrono::Duration;
use memvault::model::accounts::{InvitationRecord, Role, SessionRecord};
use memvault::model::now;
use memvault::services::accounts::hash_key;
use reqwest::Method;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::helpers::{
    assert_error, json_of, session_cookie_of, spawn_app, TestApp, TestUser, TEST_PASSWORD,
};

async fn sign_in(app: &TestApp, email: &str, password: &str) -> reqwest::Response {
    app.client
        .post(app.url("/api/auth/sign-in"))
        .json(&json!({"email": email, "password": password}))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn sign_up_sets_a_session_cookie_and_makes_an_owned_workspace() {
    let app = spawn_app().await;
    let response = app
        .client
        .post(app.url("/api/auth/sign-up"))
        .json(&json!({"email": "Ada@Example.com", "password": TEST_PASSWORD, "name": "Ada"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let set_cookie = response.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        set_cookie.starts_with("memvault.session_token="),
        "{set_cookie}"
    );
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/", "Max-Age="] {
        assert!(set_cookie.contains(attribute), "{set_cookie}");
    }
    // Served over plain http here: no Secure flag (the browser would drop the cookie).
    assert!(!set_cookie.contains("Secure"), "{set_cookie}");
    let cookie = session_cookie_of(&response);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["user"]["email"], "ada@example.com");
    assert_eq!(body["user"]["name"], "Ada");
    assert!(body.to_string().find("argon2").is_none(), "{body}");
    assert_eq!(body["workspaces"].as_array().unwrap().len(), 1);
    assert_eq!(body["workspaces"][0]["role"], "owner");
    assert_eq!(body["workspaces"][0]["billingOwnerPlan"], Value::Null);

    // The cookie is the session.
    let (status, session) = json_of(
        app.client
            .get(app.url("/api/auth/session"))
            .header("Cookie", &cookie)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{session}");
    assert_eq!(session["user"]["email"], "ada@example.com");
    assert!(session["session"]["expiresAt"].is_string());

    // The token is stored hashed, never as sent.
    let token = cookie.split_once('=').unwrap().1;
    let (record, _) = app
        .store
        .session_by_hash(&hash_key(token))
        .await
        .unwrap()
        .expect("the session row, by the token's hash");
    assert!(record.revoked_at.is_none());
    assert!(app.store.session_by_hash(token).await.unwrap().is_none());

    // Its workspace has a default vault.
    let workspace = body["workspaces"][0]["id"].as_str().unwrap();
    let (status, vaults) = json_of(
        app.client
            .get(app.url(&format!(
                "/api/context-vault/vaults?workspaceId={workspace}"
            )))
            .header("Cookie", &cookie)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{vaults}");
    assert_eq!(vaults["vaults"][0]["isDefault"], true, "{vaults}");
}

#[tokio::test]
async fn sign_up_refuses_bad_input_and_taken_emails() {
    let app = spawn_app().await;
    app.sign_up("taken@example.com").await;
    let cases = [
        (json!({"password": TEST_PASSWORD}), 400, "email"),
        (
            json!({"email": "not-an-email", "password": TEST_PASSWORD}),
            400,
            "email",
        ),
        (
            json!({"email": "a@example.com", "password": "short"}),
            400,
            "password",
        ),
        (json!({"email": "a@example.com"}), 400, "password"),
        (
            json!({"email": "a@example.com", "password": TEST_PASSWORD, "name": "   "}),
            400,
            "name",
        ),
        (
            json!({"email": "TAKEN@example.com", "password": TEST_PASSWORD}),
            409,
            "already exists",
        ),
    ];
    for (body, status, needle) in cases {
        let response = app
            .client
            .post(app.url("/api/auth/sign-up"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(response.headers().get("set-cookie").is_none());
        assert_error(response, status, needle).await;
    }
}

#[tokio::test]
async fn sign_in_answers_the_same_for_an_unknown_email_and_a_wrong_password() {
    let app = spawn_app().await;
    let user = app.sign_up("grace@example.com").await;

    let wrong = sign_in(&app, &user.email, "wrong password!").await;
    assert!(wrong.headers().get("set-cookie").is_none());
    let wrong = assert_error(wrong, 401, "invalid email or password").await;
    let unknown = sign_in(&app, "nobody@example.com", "wrong password!").await;
    let unknown = assert_error(unknown, 401, "invalid email or password").await;
    assert_eq!(wrong["error"], unknown["error"]);

    let ok = sign_in(&app, "GRACE@example.com", TEST_PASSWORD).await;
    assert_eq!(ok.status(), 200);
    let cookie = session_cookie_of(&ok);
    assert_ne!(cookie, user.cookie, "a new session per sign-in");
    let body: Value = ok.json().await.unwrap();
    assert_eq!(body["workspaces"][0]["id"], user.workspace_id.to_string());
}

#[tokio::test]
async fn sign_out_ends_the_session_and_expired_sessions_are_refused() {
    let app = spawn_app().await;
    let user = app.sign_up("sol@example.com").await;
    let out = app
        .as_user(&user, Method::POST, "/api/auth/sign-out")
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), 200);
    assert!(out.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .contains("Max-Age=0"));
    let after = app
        .as_user(&user, Method::GET, "/api/auth/session")
        .send()
        .await
        .unwrap();
    assert_error(after, 401, "sign in again").await;
    let after = app
        .as_user(&user, Method::GET, "/api/workspaces")
        .send()
        .await
        .unwrap();
    assert_error(after, 401, "sign in again").await;

    // A session past its expiry.
    let token = "expired-session-token-for-the-test-0123456789";
    let created_at = now() - Duration::days(40);
    app.store
        .insert_session(
            &SessionRecord {
                id: Uuid::now_v7(),
                user_id: user.user_id,
                created_at,
                expires_at: created_at + Duration::days(30),
                revoked_at: None,
            },
            &hash_key(token),
        )
        .await
        .unwrap();
    let expired = app
        .client
        .get(app.url("/api/auth/session"))
        .header("Cookie", format!("memvault.session_token={token}"))
        .send()
        .await
        .unwrap();
    assert_error(expired, 401, "expired").await;
    // No credentials at all.
    let none = app
        .client
        .get(app.url("/api/workspaces"))
        .send()
        .await
        .unwrap();
    assert_error(none, 401, "X-API-Key").await;
}

#[tokio::test]
async fn cookie_requests_that_change_state_must_come_from_this_origin() {
    let app = spawn_app().await;
    let user = app.sign_up("cs@example.com").await;
    let path = "/api/memories";
    let body = json!({"content": "I prefer dark roast coffee", "workspaceId": user.workspace_id});
    // No Origin: refused (a form post from another site may send none).
    let bare = app
        .client
        .post(app.url(path))
        .header("Cookie", &user.cookie)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_error(bare, 403, "cross-site").await;
    // Another site's Origin: refused.
    let evil = app
        .client
        .post(app.url(path))
        .header("Cookie", &user.cookie)
        .header("Origin", "http://evil.example")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_error(evil, 403, "cross-site").await;
    // Nothing was stored.
    let (_, list) = json_of(
        app.as_user(
            &user,
            Method::GET,
            &format!("/api/memories?workspaceId={}", user.workspace_id),
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(list["total"], 0, "{list}");
    // Reads need no Origin.
    let read = app
        .client
        .get(app.url(&format!("/api/memories?workspaceId={}", user.workspace_id)))
        .header("Cookie", &user.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), 200);
    // Its own origin: saved, with source `web` and the user as `userId`.
    let (status, saved) = json_of(
        app.as_user(&user, Method::POST, path)
            .json(&body)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{saved}");
    assert_eq!(saved["memory"]["source"], "web");
    assert_eq!(saved["memory"]["userId"], user.user_id.to_string());
    // Sign-in from another site's form is refused too (login CSRF).
    let response = app
        .client
        .post(app.url("/api/auth/sign-in"))
        .header("Origin", "http://evil.example")
        .json(&json!({"email": user.email, "password": TEST_PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_error(response, 403, "cross-site").await;
}

#[tokio::test]
async fn workspaces_are_listed_created_and_walled() {
    let app = spawn_app().await;
    let ada = app.sign_up("ada@example.com").await;
    let bob = app.sign_up("bob@example.com").await;
    let (status, created) = json_of(
        app.as_user(&ada, Method::POST, "/api/workspaces")
            .json(&json!({"name": "Research Team", "slug": "research"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["workspace"]["slug"], "research");
    assert_eq!(created["workspace"]["role"], "owner");
    let research = created["workspace"]["id"].as_str().unwrap().to_string();
    // Slugs are unique; bad slugs and names are named.
    let taken = app
        .as_user(&bob, Method::POST, "/api/workspaces")
        .json(&json!({"name": "Other", "slug": "research"}))
        .send()
        .await
        .unwrap();
    assert_error(taken, 409, "slug").await;
    for (body, field) in [
        (json!({"name": "X", "slug": "Not A Slug"}), "slug"),
        (json!({"slug": "ok-slug"}), "name"),
    ] {
        let response = app
            .as_user(&bob, Method::POST, "/api/workspaces")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_error(response, 400, field).await;
    }
    let (_, list) = json_of(
        app.as_user(&ada, Method::GET, "/api/workspaces")
            .send()
            .await
            .unwrap(),
    )
    .await;
    let names: Vec<&str> = list["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ada's workspace", "Research Team"]);
    // Bob sees only his.
    let (_, list) = json_of(
        app.as_user(&bob, Method::GET, "/api/workspaces")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(list["workspaces"].as_array().unwrap().len(), 1);
    // ... and cannot reach Ada's, whether it exists or not: the same answer.
    for workspace in [research.clone(), Uuid::now_v7().to_string()] {
        let response = app
            .as_user(
                &bob,
                Method::GET,
                &format!("/api/workspaces/{workspace}/team"),
            )
            .send()
            .await
            .unwrap();
        assert_error(response, 403, "not a member").await;
    }
    // A key cannot create workspaces; it lists only its own.
    let response = app
        .request(Method::POST, "/api/workspaces")
        .json(&json!({"name": "By Key"}))
        .send()
        .await
        .unwrap();
    assert_error(response, 401, "signed-in user").await;
    let (status, list) = app.get_json("/api/workspaces").await;
    assert_eq!(status, 200);
    assert_eq!(list["workspaces"][0]["id"], app.workspace_id.to_string());
    assert_eq!(list["workspaces"][0]["role"], "owner");
}

#[tokio::test]
async fn the_team_lists_members_and_owners_see_pending_invitations() {
    let app = spawn_app().await;
    let owner = app.sign_up("owner@example.com").await;
    let viewer = app.sign_up("viewer@example.com").await;
    let ws = owner.workspace_id;
    app.add_member(&owner, ws, &viewer, "viewer").await;
    let (status, _) = json_of(
        app.as_user(
            &owner,
            Method::POST,
            &format!("/api/workspaces/{ws}/invitations"),
        )
        .json(&json!({"email": "later@example.com", "role": "admin"}))
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, 201);
    let (status, team) = json_of(
        app.as_user(&owner, Method::GET, &format!("/api/workspaces/{ws}/team"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{team}");
    assert_eq!(team["currentUserRole"], "owner");
    let members = team["members"].as_array().unwrap();
    assert_eq!(members.len(), 2);
    assert_eq!(members[0]["email"], "owner@example.com");
    assert_eq!(members[0]["role"], "owner");
    assert_eq!(members[1]["email"], "viewer@example.com");
    assert_eq!(members[1]["role"], "viewer");
    assert_eq!(members[1]["userId"], viewer.user_id.to_string());
    assert!(members[1].get("name").is_some() && members[1].get("image").is_some());
    let invitations = team["invitations"].as_array().unwrap();
    assert_eq!(invitations.len(), 1);
    assert_eq!(invitations[0]["email"], "later@example.com");
    assert_eq!(invitations[0]["role"], "admin");
    assert!(invitations[0].get("token").is_none(), "{team}");
    // A viewer reads the team, without the invitations.
    let (status, team) = json_of(
        app.as_user(&viewer, Method::GET, &format!("/api/workspaces/{ws}/team"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(team["currentUserRole"], "viewer");
    assert_eq!(team["invitations"].as_array().unwrap().len(), 0);
}

async fn patch_role(
    app: &TestApp,
    by: &TestUser,
    ws: Uuid,
    member: &str,
    role: &str,
) -> reqwest::Response {
    app.as_user(
        by,
        Method::PATCH,
        &format!("/api/workspaces/{ws}/members/{member}"),
    )
    .json(&json!({"role": role}))
    .send()
    .await
    .unwrap()
}

#[tokio::test]
async fn a_workspace_always_keeps_an_owner() {
    let app = spawn_app().await;
    let owner = app.sign_up("first@example.com").await;
    let second = app.sign_up("second@example.com").await;
    let ws = owner.workspace_id;
    let (_, team) = json_of(
        app.as_user(&owner, Method::GET, &format!("/api/workspaces/{ws}/team"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    let owner_member = team["members"][0]["id"].as_str().unwrap().to_string();
    // The only owner can be neither demoted nor removed.
    assert_error(
        patch_role(&app, &owner, ws, &owner_member, "admin").await,
        409,
        "keep an owner",
    )
    .await;
    let removed = app
        .as_user(
            &owner,
            Method::DELETE,
            &format!("/api/workspaces/{ws}/members/{owner_member}"),
        )
        .send()
        .await
        .unwrap();
    assert_error(removed, 409, "keep an owner").await;
    // Invitations cannot make owners; a role outside the enum is named.
    let response = app
        .as_user(
            &owner,
            Method::POST,
            &format!("/api/workspaces/{ws}/invitations"),
        )
        .json(&json!({"email": "x@example.com", "role": "owner"}))
        .send()
        .await
        .unwrap();
    assert_error(response, 400, "role").await;
    // With a second owner, the first may step down.
    let second_member = app.add_member(&owner, ws, &second, "admin").await;
    let response = patch_role(&app, &owner, ws, &second_member.to_string(), "owner").await;
    let (status, changed) = json_of(response).await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["member"]["role"], "owner");
    assert_eq!(changed["member"]["userId"], second.user_id.to_string());
    let response = patch_role(&app, &owner, ws, &owner_member, "viewer").await;
    assert_eq!(response.status(), 200);
    // Now the second is the last owner.
    assert_error(
        patch_role(&app, &second, ws, &second_member.to_string(), "member").await,
        409,
        "keep an owner",
    )
    .await;
    // A bad role is named; an unknown member is 404.
    assert_error(
        patch_role(&app, &second, ws, &owner_member, "boss").await,
        400,
        "role",
    )
    .await;
    assert_error(
        patch_role(&app, &second, ws, &Uuid::now_v7().to_string(), "member").await,
        404,
        "member",
    )
    .await;
    // Concurrent demotions of the two owners of a fresh pair leave one owner.
    let third = app.sign_up("third@example.com").await;
    let third_member = app.add_member(&second, ws, &third, "admin").await;
    assert_eq!(
        patch_role(&app, &second, ws, &third_member.to_string(), "owner")
            .await
            .status(),
        200
    );
    let (second_id, third_id) = (second_member.to_string(), third_member.to_string());
    let (a, b) = tokio::join!(
        patch_role(&app, &second, ws, &second_id, "member"),
        patch_role(&app, &third, ws, &third_id, "member"),
    );
    let statuses = [a.status().as_u16(), b.status().as_u16()];
    assert!(
        statuses.contains(&200) && statuses.contains(&409),
        "{statuses:?}"
    );
    let members = app.store.members(ws).await.unwrap();
    assert_eq!(members.iter().filter(|m| m.role == Role::Owner).count(), 1);
}

#[tokio::test]
async fn invitations_are_single_use_for_the_invited_email_and_expire() {
    let app = spawn_app().await;
    let owner = app.sign_up("boss@example.com").await;
    let invitee = app.sign_up("new@example.com").await;
    let stranger = app.sign_up("stranger@example.com").await;
    let ws = owner.workspace_id;
    let invite = |email: &str, role: &str| {
        app.as_user(
            &owner,
            Method::POST,
            &format!("/api/workspaces/{ws}/invitations"),
        )
        .json(&json!({"email": email, "role": role}))
        .send()
    };
    let (status, created) = json_of(invite("NEW@example.com", "member").await.unwrap()).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["invitation"]["email"], "new@example.com");
    assert_eq!(created["invitation"]["workspaceId"], ws.to_string());
    let expires: chrono::DateTime<chrono::Utc> = created["invitation"]["expiresAt"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let days = (expires - chrono::Utc::now()).num_hours();
    assert!(
        (167..=168).contains(&days),
        "7-day expiry, got {days} hours"
    );
    let token = created["token"].as_str().unwrap().to_string();
    let accept = |user: &TestUser, token: &str| {
        app.as_user(
            user,
            Method::POST,
            &format!("/api/invitations/{token}/accept"),
        )
        .send()
    };
    // Another signed-in user cannot use it; a key cannot; an unknown token is 404.
    assert_error(
        accept(&stranger, &token).await.unwrap(),
        403,
        "another email",
    )
    .await;
    let by_key = app
        .request(Method::POST, &format!("/api/invitations/{token}/accept"))
        .send()
        .await
        .unwrap();
    assert_error(by_key, 401, "signed-in user").await;
    assert_error(
        accept(&invitee, "no-such-token").await.unwrap(),
        404,
        "invitation",
    )
    .await;
    // The invitee joins with the role.
    let (status, joined) = json_of(accept(&invitee, &token).await.unwrap()).await;
    assert_eq!(status, 200, "{joined}");
    assert_eq!(joined["workspace"]["id"], ws.to_string());
    assert_eq!(joined["workspace"]["role"], "member");
    assert_eq!(joined["member"]["role"], "member");
    // Used once only.
    assert_error(
        accept(&invitee, &token).await.unwrap(),
        410,
        "already been used",
    )
    .await;
    // Already a member: no new invitation.
    assert_error(
        invite("new@example.com", "viewer").await.unwrap(),
        409,
        "already a member",
    )
    .await;

    // Revoked invitations are refused.
    let (_, revoked) = json_of(invite("stranger@example.com", "viewer").await.unwrap()).await;
    let id = revoked["invitation"]["id"].as_str().unwrap();
    let response = app
        .as_user(
            &owner,
            Method::DELETE,
            &format!("/api/workspaces/{ws}/invitations/{id}"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let token = revoked["token"].as_str().unwrap();
    assert_error(accept(&stranger, token).await.unwrap(), 410, "revoked").await;
    // Revoking again: no such pending invitation.
    let response = app
        .as_user(
            &owner,
            Method::DELETE,
            &format!("/api/workspaces/{ws}/invitations/{id}"),
        )
        .send()
        .await
        .unwrap();
    assert_error(response, 404, "invitation").await;

    // An expired invitation (stored as made eight days ago) is refused clearly.
    let token = "expired-invitation-token-0123456789abcdefghij";
    let created_at = now() - Duration::days(8);
    app.store
        .insert_invitation(
            &InvitationRecord {
                id: Uuid::now_v7(),
                workspace_id: ws,
                email: "stranger@example.com".to_string(),
                role: Role::Viewer,
                invited_by: Some(owner.user_id),
                created_at,
                expires_at: created_at + Duration::days(7),
                accepted_at: None,
                revoked_at: None,
            },
            &hash_key(token),
        )
        .await
        .unwrap();
    assert_error(accept(&stranger, token).await.unwrap(), 410, "expired").await;
    let members = app.store.members(ws).await.unwrap();
    assert_eq!(members.len(), 2, "only the owner and the invitee");
}

#[tokio::test]
async fn api_keys_are_shown_once_bound_to_their_workspace_and_revoked_at_once() {
    let app = spawn_app().await;
    let owner = app.sign_up("keys@example.com").await;
    let ws = owner.workspace_id;
    let (status, created) = json_of(
        app.as_user(
            &owner,
            Method::POST,
            &format!("/api/workspaces/{ws}/api-keys"),
        )
        .json(&json!({"name": "production"}))
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let key = created["key"].as_str().unwrap().to_string();
    assert!(key.starts_with("mc_") && key.len() >= 35, "{key}");
    assert_eq!(created["apiKey"]["name"], "production");
    assert_eq!(created["apiKey"]["role"], "owner");
    assert!(key.starts_with(created["apiKey"]["prefix"].as_str().unwrap()));
    let key_id = created["apiKey"]["id"].as_str().unwrap().to_string();
    // Listed without the key itself.
    let (status, list) = json_of(
        app.as_user(
            &owner,
            Method::GET,
            &format!("/api/workspaces/{ws}/api-keys"),
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(list["apiKeys"].as_array().unwrap().len(), 1);
    assert!(!list.to_string().contains(&key), "{list}");
    assert_eq!(list["apiKeys"][0]["lastUsedAt"], Value::Null);
    // The key works for its workspace, and only there.
    let saved = app
        .with_key(&key, Method::POST, "/api/memories")
        .json(&json!({"content": "Our release train leaves on Wednesdays"}))
        .send()
        .await
        .unwrap();
    assert_eq!(saved.status(), 201);
    let saved: Value = saved.json().await.unwrap();
    assert_eq!(saved["memory"]["source"], "api");
    let other = app
        .with_key(
            &key,
            Method::GET,
            &format!("/api/memories?workspaceId={}", app.workspace_id),
        )
        .send()
        .await
        .unwrap();
    assert_error(other, 403, "another workspace").await;
    // Its use is recorded.
    let mut used = Value::Null;
    for _ in 0..50 {
        let (_, list) = json_of(
            app.as_user(
                &owner,
                Method::GET,
                &format!("/api/workspaces/{ws}/api-keys"),
            )
            .send()
            .await
            .unwrap(),
        )
        .await;
        used = list["apiKeys"][0]["lastUsedAt"].clone();
        if used.is_string() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(used.is_string(), "lastUsedAt recorded");
    // Revoked: refused on the very next request.
    let response = app
        .as_user(
            &owner,
            Method::DELETE,
            &format!("/api/workspaces/{ws}/api-keys/{key_id}"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let after = app
        .with_key(&key, Method::GET, "/api/memories")
        .send()
        .await
        .unwrap();
    assert_error(after, 401, "revoked").await;
    let (_, list) = json_of(
        app.as_user(
            &owner,
            Method::GET,
            &format!("/api/workspaces/{ws}/api-keys"),
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(list["apiKeys"].as_array().unwrap().len(), 0);
    // Names are required; a key cannot be given more than its maker has.
    let response = app
        .as_user(
            &owner,
            Method::POST,
            &format!("/api/workspaces/{ws}/api-keys"),
        )
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_error(response, 400, "name").await;
    let admin = app.sign_up("admin@example.com").await;
    app.add_member(&owner, ws, &admin, "admin").await;
    let response = app
        .as_user(
            &admin,
            Method::POST,
            &format!("/api/workspaces/{ws}/api-keys"),
        )
        .json(&json!({"name": "too strong", "role": "owner"}))
        .send()
        .await
        .unwrap();
    assert_error(response, 400, "role").await;
}

#[tokio::test]
async fn removing_a_member_revokes_their_keys_and_their_access() {
    let app = spawn_app().await;
    let owner = app.sign_up("lead@example.com").await;
    let dev = app.sign_up("dev@example.com").await;
    let ws = owner.workspace_id;
    let member_id = app.add_member(&owner, ws, &dev, "admin").await;
    let key = app.create_key(&dev, ws, None).await;
    assert_eq!(
        app.with_key(&key, Method::GET, "/api/memories")
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    let response = app
        .as_user(
            &owner,
            Method::DELETE,
            &format!("/api/workspaces/{ws}/members/{member_id}"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let after = app
        .with_key(&key, Method::GET, "/api/memories")
        .send()
        .await
        .unwrap();
    assert_error(after, 401, "revoked").await;
    let team = app
        .as_user(&dev, Method::GET, &format!("/api/workspaces/{ws}/team"))
        .send()
        .await
        .unwrap();
    assert_error(team, 403, "not a member").await;
    // A member may leave on their own.
    let viewer = app.sign_up("leaver@example.com").await;
    let viewer_member = app.add_member(&owner, ws, &viewer, "viewer").await;
    let response = app
        .as_user(
            &viewer,
            Method::DELETE,
            &format!("/api/workspaces/{ws}/members/{viewer_member}"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}
