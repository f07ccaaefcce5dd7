#![doc = include_str!("../README.md")]

mod actor;
mod audit;
mod config;
mod domain;
mod error;
mod invoke;
mod permissions;
mod registry;
mod table;

pub use actor::RegistryMsg;
pub use config::RegistryConfig;
pub use domain::{DomainMsg, DomainStatus};
pub use error::RegistryError;
pub use permissions::{DEFAULT_PERMISSIONS_TOML, PermissionMatrix, PermissionsError};
pub use registry::{RegistryBuilder, RuntimeToolSpec, ToolRegistry};
pub use table::RuntimeTool;
